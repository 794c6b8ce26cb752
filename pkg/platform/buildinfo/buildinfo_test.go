package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestFrom(t *testing.T) {
	embedded := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/resultsync/resultsync", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}}}
	dirty := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name         string
		bi           *debug.BuildInfo
		ok           bool
		ldV, ldR     string
		want         Info
		wantVersionL string
	}{
		{name: "embedded", bi: embedded, ok: true, want: Info{Version: "v0.3.0", Revision: "0123abcd", GoVersion: "go1.26.8"},
			wantVersionL: "results v0.3.0 (revision 0123abcd, go1.26.8)"},
		{name: "dirty work tree", bi: dirty, ok: true, want: Info{Version: "(devel)", Revision: "0123abcd-dirty", GoVersion: "go1.26.8"},
			wantVersionL: "results (devel) (revision 0123abcd-dirty, go1.26.8)"},
		{name: "ldflags win", bi: dirty, ok: true, ldV: "v0.4.0-3-g0123abc", ldR: "0123abc",
			want: Info{Version: "v0.4.0-3-g0123abc", Revision: "0123abc", GoVersion: "go1.26.8"}, wantVersionL: "results v0.4.0-3-g0123abc (revision 0123abc, go1.26.8)"},
		{name: "nothing embedded", ok: false, want: Info{Version: "(devel)", GoVersion: Get().GoVersion},
			wantVersionL: "results (devel) (revision unknown, " + Get().GoVersion + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := from(tc.bi, tc.ok, tc.ldV, tc.ldR)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("from (-want +got):\n%s", diff)
			}
			if s := got.String("results"); s != tc.wantVersionL {
				t.Errorf("String = %q, want %q", s, tc.wantVersionL)
			}
		})
	}
}

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Info{Version: "v0.3.0", Revision: "0123abcd", GoVersion: "go1.26.8"}.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got = append(got, fmt.Sprintf("%s{%s} %g", mf.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	want := []string{"resultsync_build_info{goversion=go1.26.8,revision=0123abcd,version=v0.3.0} 1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gathered (-want +got):\n%s", diff)
	}
}
