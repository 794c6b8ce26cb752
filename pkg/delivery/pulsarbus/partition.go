package pulsarbus

import (
	"strconv"
	"strings"
)

// KeyPartition returns the partition of a topic of n partitions that a
// producer with the client's default router (HashingScheme JavaStringHash,
// the relay's) sends a message keyed key to: JavaStringHash(key) mod n, as
// pulsar-client-go's default router computes it. n < 2 gives 0.
// TestKeyPartitionMatchesTheBroker checks it against real publishes.
func KeyPartition(key string, n int) int {
	if n < 2 {
		return 0
	}
	var h uint32
	for i := 0; i < len(key); i++ {
		h = 31*h + uint32(key[i])
	}
	return int(h % uint32(n))
}

// DataIDPartition is KeyPartition of a record's key (its data_id in
// decimal, as the relay keys its messages).
func DataIDPartition(dataID int64, n int) int {
	return KeyPartition(strconv.FormatInt(dataID, 10), n)
}

// PartitionOf splits a partition's topic name (the name a message of a
// partitioned topic carries: persistent://t/ns/name-partition-3) into the
// partitioned topic and the index; a name without the suffix is returned
// whole with index 0.
func PartitionOf(topic string) (base string, index int) {
	i := strings.LastIndex(topic, "-partition-")
	if i < 0 {
		return topic, 0
	}
	n, err := strconv.Atoi(topic[i+len("-partition-"):])
	if err != nil || n < 0 {
		return topic, 0
	}
	return topic[:i], n
}
