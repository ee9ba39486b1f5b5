package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register(&command{name: "version", summary: "print glassbox's version, commit and Go version (also: glassbox --version)", run: runVersion})
}

// version is the release this binary is, set when it is built:
//
//	go build -ldflags "-X main.version=v0.4.0" ./cmd/glassbox
//
// Unset, the module version the Go toolchain recorded is used.
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

// versionLine is "glassbox VERSION (commit, date, modified; go, os/arch)":
// the linker's version, else the module's, else "devel"; the VCS facts the
// toolchain stamped when it built from a checkout (bi may be nil).
func versionLine(v string, bi *debug.BuildInfo) string {
	goVersion := runtime.Version()
	var vcs []string
	if bi != nil {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
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
	if v == "" {
		v = "devel"
	}
	build := goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
	if len(vcs) > 0 {
		build = strings.Join(vcs, ", ") + "; " + build
	}
	return fmt.Sprintf("glassbox %s (%s)", v, build)
}
