// Package buildinfo says which build of resultsync a binary is: the module
// version and the VCS revision, from -ldflags -X (make build sets both from
// git) or else from the build information the Go toolchain embeds
// (debug.ReadBuildInfo: the module version, "(devel)" in a checkout, and
// vcs.revision when built inside a git work tree), and the Go version. Every
// binary answers --version with String, logs Attrs at start and exports
// Collector (resultsync_build_info{version,revision,goversion} 1).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by make build:
//
//	-ldflags "-X github.com/resultsync/resultsync/pkg/platform/buildinfo.version=v1.2.3
//	          -X github.com/resultsync/resultsync/pkg/platform/buildinfo.revision=0123abc"
var version, revision string

// Info is one binary's build.
type Info struct {
	// Version is the module version ("v1.2.3", "v0.0.0-2026...-0123abc",
	// "(devel)" for a build in a checkout without -ldflags).
	Version string
	// Revision is the VCS commit ("" when unknown), with "-dirty" when the
	// work tree had local changes.
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

var get = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	return from(bi, ok, version, revision)
})

// Get returns the running binary's build.
func Get() Info { return get() }

// from builds an Info out of the embedded build information (ok false:
// none) and the -ldflags values, which win when set.
func from(bi *debug.BuildInfo, ok bool, ldVersion, ldRevision string) Info {
	in := Info{Version: "(devel)", GoVersion: runtime.Version()}
	if ok && bi != nil {
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if in.Revision != "" && dirty {
			in.Revision += "-dirty"
		}
	}
	if ldVersion != "" {
		in.Version = ldVersion
	}
	if ldRevision != "" {
		in.Revision = ldRevision
	}
	return in
}

// String is the --version line of the binary called name:
// "results v1.2.3 (revision 0123abc, go1.26.8)".
func (in Info) String(name string) string {
	rev := in.Revision
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s %s (revision %s, %s)", name, in.Version, rev, in.GoVersion)
}

// Attrs are the build's log attributes (version, revision, go_version).
func (in Info) Attrs() []any {
	return []any{"version", in.Version, "revision", in.Revision, "go_version", in.GoVersion}
}

// Collector exports the build as the gauge
// resultsync_build_info{version,revision,goversion} = 1.
func (in Info) Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "resultsync_build_info",
		Help:        "The build of this binary (always 1): module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": in.Revision, "goversion": in.GoVersion},
	})
	g.Set(1)
	return g
}
