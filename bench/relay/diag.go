package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// diag is what one phase cost, for finding where the time goes: CPU
// seconds of the bench process (the relays), the database server and the
// broker (read from /proc through the local stack's pid files), and per
// statement of the bench's own databases (performance_schema digests, MySQL
// only): calls, rows examined per call, time and lock time (which includes
// InnoDB row lock waits since MySQL 8.0.28), plus the server-wide InnoDB row
// lock waits.
type diag struct {
	at      time.Time
	cpu     map[string]time.Duration
	digests map[string]digest
	status  map[string]int64
}

type digest struct {
	text               string
	calls, examined    int64
	latency, lock, cpu time.Duration
}

// processes are the local stack's servers whose CPU the bench reports.
func processes() benchkit.CPUMeter {
	engine := "mysql"
	if os.Getenv("RS_MYSQL_ENGINE") == "mariadb" {
		engine = "mariadb"
	}
	out := benchkit.CPUMeter{"relays (this process)": os.Getpid()}
	if pid, ok := benchkit.StackPID(engine); ok {
		out["database"] = pid
	}
	if pid, ok := benchkit.StackPID("pulsar"); ok {
		out["pulsar"] = pid
	}
	return out
}

func snapshot(ctx context.Context, db *sql.DB, schemas []string) diag {
	d := diag{at: time.Now(), cpu: map[string]time.Duration{}, digests: map[string]digest{}, status: map[string]int64{}}
	d.cpu = processes().Read()
	in := "'" + strings.Join(schemas, "','") + "'"
	rows, err := db.QueryContext(ctx, "SELECT DIGEST_TEXT, COUNT_STAR, SUM_ROWS_EXAMINED, SUM_TIMER_WAIT, SUM_LOCK_TIME, SUM_CPU_TIME "+
		"FROM performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME IN ("+in+") AND DIGEST_TEXT IS NOT NULL")
	if err == nil {
		for rows.Next() {
			var x digest
			var lat, lock, cpu int64
			if rows.Scan(&x.text, &x.calls, &x.examined, &lat, &lock, &cpu) == nil {
				x.latency, x.lock, x.cpu = time.Duration(lat/1000), time.Duration(lock/1000), time.Duration(cpu/1000)
				d.digests[x.text] = x
			}
		}
		rows.Close()
	}
	for _, v := range []string{"Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_deadlocks"} {
		var name string
		var n int64
		if db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v+"'").Scan(&name, &n) == nil {
			d.status[v] = n
		}
	}
	var hist string
	if db.QueryRowContext(ctx, "SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&hist) == nil {
		n, _ := strconv.ParseInt(hist, 10, 64)
		d.status["history_list_length"] = n
	}
	return d
}

// report prints what happened between a and b for events rows.
func report(a, b diag, events int) {
	wall := b.at.Sub(a.at)
	var names []string
	for k := range b.cpu {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, k := range names {
		c := b.cpu[k] - a.cpu[k]
		parts = append(parts, fmt.Sprintf("%s %.1fs (%.0f%% of a core, %.0fus/event)", k, c.Seconds(), 100*c.Seconds()/wall.Seconds(), float64(c.Microseconds())/float64(events)))
	}
	fmt.Printf("    cpu over %.1fs: %s\n", wall.Seconds(), strings.Join(parts, "; "))
	fmt.Printf("    server-wide: row lock waits %d (%d ms), deadlocks %d; history list length %d -> %d\n",
		b.status["Innodb_row_lock_waits"]-a.status["Innodb_row_lock_waits"], b.status["Innodb_row_lock_time"]-a.status["Innodb_row_lock_time"],
		b.status["Innodb_deadlocks"]-a.status["Innodb_deadlocks"], a.status["history_list_length"], b.status["history_list_length"])
	var ds []digest
	for k, x := range b.digests {
		p := a.digests[k]
		x.calls -= p.calls
		x.examined -= p.examined
		x.latency -= p.latency
		x.lock -= p.lock
		x.cpu -= p.cpu
		if x.calls > 0 {
			ds = append(ds, x)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].latency > ds[j].latency })
	for i, x := range ds {
		if i == 6 {
			break
		}
		text := x.text
		if len(text) > 70 {
			text = text[:70] + "..."
		}
		fmt.Printf("    %7d calls %9.0f rows examined/call %8.1fms/call lock %6.2fms/call  %s\n",
			x.calls, float64(x.examined)/float64(x.calls), float64(x.latency.Microseconds())/1000/float64(x.calls),
			float64(x.lock.Microseconds())/1000/float64(x.calls), text)
	}
}

// lockSampler polls InnoDB for transactions of the bench's databases that
// wait for a lock (information_schema, so it works with performance_schema
// off and on MariaDB), every interval until stop is called.
type lockSampler struct {
	samples, waiting, maxAtOnce int
	example                     string
	stop                        func()
}

func sampleLocks(ctx context.Context, db *sql.DB, schemas []string, interval time.Duration) *lockSampler {
	s := &lockSampler{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); <-done }) }
	q := "SELECT COALESCE(t.trx_query, '') FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id " +
		"WHERE t.trx_state = 'LOCK WAIT' AND p.DB IN ('" + strings.Join(schemas, "','") + "')"
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				continue
			}
			n := 0
			for rows.Next() {
				var text string
				if rows.Scan(&text) == nil {
					n++
					if s.example == "" {
						s.example = text
					}
				}
			}
			rows.Close()
			s.samples++
			if n > 0 {
				s.waiting++
			}
			s.maxAtOnce = max(s.maxAtOnce, n)
		}
	}()
	return s
}

func (s *lockSampler) report() {
	s.stop()
	ex := s.example
	if len(ex) > 90 {
		ex = ex[:90] + "..."
	}
	fmt.Printf("    lock waits in the bench databases: %d of %d samples saw a waiting transaction (at most %d at once)%s\n",
		s.waiting, s.samples, s.maxAtOnce, map[bool]string{true: ", e.g. " + ex, false: ""}[ex != ""])
}

// brokerEntries reports how many entries (batches) the broker stored for
// topic, from its internal stats: the events per entry are the batching
// the producers achieved, which decides the broker's CPU per event.
func brokerEntries(ctx context.Context, topic string) (int64, error) {
	url := infratest.PulsarAdminURL() + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/internalStats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		EntriesAddedCounter int64 `json:"entriesAddedCounter"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("internal stats of %s: HTTP %d", topic, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("internal stats of %s: %w", topic, err)
	}
	return st.EntriesAddedCounter, nil
}

// settle waits until the database server and the broker are quiet, or at
// most limit (benchkit.CPUMeter.Settle): a drain that starts while the
// server still purges and flushes what the last phase and the reset wrote
// pays for them, and that, not the relays, made the figures of one instance
// count swing by 10% from round to round. It returns how long it waited.
func settle(ctx context.Context, limit time.Duration) time.Duration {
	procs := processes()
	delete(procs, "relays (this process)")
	return procs.Settle(ctx, limit)
}
