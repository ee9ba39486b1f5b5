package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/glassbox-ai/glassbox/server"
)

func init() {
	register(&command{name: "version", summary: "print glassbox's version, commit and Go version (also: glassbox --version)", run: runVersion})
	// The server's /api/version and the web UI say the same.
	bi, _ := debug.ReadBuildInfo()
	server.Version = releaseOf(version, bi, server.Version)
}

// version is the release this binary is, set when it is built:
//
//	go build -ldflags "-X main.version=v0.4.0" ./cmd/glassbox
//
// Unset, the module version the Go toolchain recorded is used, else the
// server package's.
var version string

func runVersion(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "version", "")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(env.stdout, versionLine(version, bi))
	return nil
}

// releaseOf is the linker's version v, else the module version of the
// build information (bi may be nil), else fallback.
func releaseOf(v string, bi *debug.BuildInfo, fallback string) string {
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = fallback
	}
	return v
}

// versionLine is "glassbox VERSION (commit, date, modified; go, os/arch)":
// the release (releaseOf) and the VCS facts the toolchain stamped when it
// built from a checkout (bi may be nil).
func versionLine(v string, bi *debug.BuildInfo) string {
	v = releaseOf(v, bi, server.Version)
	goVersion := runtime.Version()
	var vcs []string
	if bi != nil {
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		if r := set["vcs.revision"]; r != "" {
			vcs = append(vcs, "commit "+r[:min(len(r), 12)])
		}
		if t := set["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		if set["vcs.modified"] == "true" {
			vcs = append(vcs, "modified")
		}
	}
	build := goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	if len(vcs) > 0 {
		build = strings.Join(vcs, ", ") + "; " + build
	}
	return fmt.Sprintf("glassbox %s (%s)", v, build)
}
