package mysqldb

import (
	"testing"
	"time"
)

func TestTimeouts(t *testing.T) {
	tests := []struct {
		name              string
		dsn               string
		o                 Options
		wantRead, wantWrt time.Duration
	}{
		{"defaults", "u:p@tcp(127.0.0.1:3306)/db", Options{}, DefaultReadTimeout, DefaultWriteTimeout},
		{"options", "u:p@tcp(127.0.0.1:3306)/db", Options{ReadTimeout: 5 * time.Second, WriteTimeout: 2 * time.Second}, 5 * time.Second, 2 * time.Second},
		{"disabled", "u:p@tcp(127.0.0.1:3306)/db", Options{ReadTimeout: -1}, 0, DefaultWriteTimeout},
		{"the DSN wins", "u:p@tcp(127.0.0.1:3306)/db?readTimeout=7s&writeTimeout=8s", Options{ReadTimeout: 5 * time.Second}, 7 * time.Second, 8 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			tc.o.configure(cfg)
			if cfg.ReadTimeout != tc.wantRead || cfg.WriteTimeout != tc.wantWrt {
				t.Errorf("read/write timeouts = %s/%s, want %s/%s", cfg.ReadTimeout, cfg.WriteTimeout, tc.wantRead, tc.wantWrt)
			}
			if cfg.Timeout == 0 {
				t.Error("no dial timeout")
			}
		})
	}
}
