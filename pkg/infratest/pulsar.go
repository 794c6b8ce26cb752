package infratest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/pulsarbus"
)

// PulsarURL is the broker URL of the local Pulsar standalone.
func PulsarURL() string {
	return "pulsar://127.0.0.1:" + Env("RS_PULSAR_PORT", "16650")
}

// PulsarAdminURL is the admin REST base URL of the local Pulsar standalone.
func PulsarAdminURL() string {
	return "http://127.0.0.1:" + Env("RS_PULSAR_WEB_PORT", "18080")
}

// NewPulsarClient returns a client of the local broker, closed when the test
// ends, after checking that the broker answers its admin API.
func NewPulsarClient(t testing.TB) pulsar.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, PulsarAdminURL()+"/admin/v2/namespaces/public", nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("admin API answered %s", resp.Status)
		}
	}
	if err != nil {
		Unavailable(t, "Pulsar", "pulsar.log", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: PulsarURL()})
	if err != nil {
		t.Fatalf("pulsar client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Topic returns a topic name unique to this test in public/default.
func Topic(t testing.TB, base string) string {
	return pulsarbus.Topic("public", "default", base+"-"+Suffix())
}
