package config

// Values of the local stack started by deploy/local (see deploy/local/env.sh),
// applied only in the local profile (Loader.Need). Production deployments set
// every one of them explicitly.
const (
	// DefaultShards is the local shard map: two shards on the local MySQL
	// server (deploy/local/env.sh sets RS_SHARDS for the chosen engine).
	DefaultShards = "shard-0=resultsync:resultsync@tcp(127.0.0.1:13306)/rs_shard_0," +
		"shard-1=resultsync:resultsync@tcp(127.0.0.1:13306)/rs_shard_1"
	// DefaultControlDSN is the local control database.
	DefaultControlDSN = "resultsync:resultsync@tcp(127.0.0.1:13306)/rs_control"
	// DefaultClickHouseAddr is the local ClickHouse native-protocol address.
	DefaultClickHouseAddr = "127.0.0.1:19000"
	// DefaultClickHouseDatabase is the projection database.
	DefaultClickHouseDatabase = "resultsync"
	// DefaultPulsarURL is the local Pulsar broker.
	DefaultPulsarURL = "pulsar://127.0.0.1:16650"
	// DefaultTopic carries FitnessResultChanged events, keyed by data_id.
	DefaultTopic = "persistent://public/default/fitness-result-changed"
)
