package resultapi

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// OpenStores opens one pool per shard without requiring it to be up: a shard
// that is down fails only its own requests.
func OpenStores(ctx context.Context, log *slog.Logger, m shard.Map, maxConns int, opts resultstore.Options) ([]*resultstore.Store, func(), error) {
	var dbs []*sql.DB
	closeAll := func() {
		for _, db := range dbs {
			_ = db.Close()
		}
	}
	stores := make([]*resultstore.Store, len(m.Shards))
	for i, s := range m.Shards {
		db, err := mysqldb.OpenLazy(s.DSN, resultstore.PoolOptions(maxConns))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("shard %s: %w", s.ID, err)
		}
		dbs = append(dbs, db)
		if err := db.PingContext(ctx); err != nil {
			log.Warn("shard unreachable at start-up; its requests fail until it returns", "shard", s.ID, "err", err)
		}
		stores[i] = resultstore.New(s.ID, db, opts)
	}
	return stores, closeAll, nil
}
