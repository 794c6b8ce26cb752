package server

import (
	"bytes"
	"encoding/json"
	"testing"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/buildinfo"
)

func TestPrintVersion(t *testing.T) {
	want := buildinfo.Get().String("results") + "\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "--version", args: []string{"--version"}, want: want},
		{name: "-version after flags", args: []string{"--log-level=debug", "-version"}, want: want},
		{name: "no flag", args: []string{"--log-level=debug"}},
		{name: "after --", args: []string{"--", "--version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := printVersion(&out, "results", tc.args); got != (tc.want != "") {
				t.Errorf("printVersion = %v", got)
			}
			if out.String() != tc.want {
				t.Errorf("printed %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestStartLogNamesTheBuild(t *testing.T) {
	var out bytes.Buffer
	startLog(&out, "relay")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("start line %q: %v", out.String(), err)
	}
	in := buildinfo.Get()
	for k, want := range map[string]string{"msg": "starting", "service": "relay", "version": in.Version, "revision": in.Revision, "go_version": in.GoVersion} {
		if line[k] != want {
			t.Errorf("start line %s = %v, want %q (%s)", k, line[k], want, out.String())
		}
	}
}

func TestRequestID(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  any
		want string
	}{
		{"string field", &fitnessv1.CorrectResultRequest{RequestId: "c-1"}, "c-1"},
		{"no such field", &fitnessv1.GetResultRequest{DataId: 1}, ""},
		{"empty", &fitnessv1.CreateRepairRequest{}, ""},
		{"nil message", (*fitnessv1.RecordResultRequest)(nil), ""},
		{"not a proto message", "request_id", ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requestID(tc.msg); got != tc.want {
				t.Errorf("requestID = %q, want %q", got, tc.want)
			}
		})
	}
}
