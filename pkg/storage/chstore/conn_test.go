package chstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Options.User and Options.Password reach the server: the local server's
// account with a password logs in with it, and a wrong password is refused
// with an error that names the server and never the password.
func TestOpenWithAnAccount(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("accounts are a server's: runs on the ClickHouse server pass")
	}
	ch := infratest.NewClickHouseDatabase(t, false)
	user, password := infratest.ClickHouseAppAccount()
	ctx := context.Background()
	conn, err := chstore.Open(ctx, chstore.Options{Addr: infratest.ClickHouseAddr(), Database: ch.Name, User: user, Password: password})
	if err != nil {
		infratest.Unavailable(t, "ClickHouse account "+user+" (deploy/local/clickhouse.sh start configures it)", "clickhouse-server.err.log", err)
	}
	defer conn.Close()
	var who string
	// 18.16 has no currentUser(): the query finds itself in system.processes.
	if err := conn.QueryRow(ctx, "SELECT user FROM system.processes WHERE query LIKE '%whoami-marker-4711%'").Scan(&who); err != nil || who != user {
		t.Errorf("the session's user = %q, %v; want %q", who, err, user)
	}

	const wrong = "not-the-password-4711"
	_, err = chstore.Open(ctx, chstore.Options{Addr: infratest.ClickHouseAddr(), Database: ch.Name, User: user, Password: wrong})
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), infratest.ClickHouseAddr()) {
		t.Errorf("error %q: want the server named and the password absent", err)
	}
	t.Logf("wrong password: %v", err)
}
