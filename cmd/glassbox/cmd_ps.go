package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/glassbox-ai/glassbox/plan"
)

// psConfig is the ps command's flags.
type psConfig struct {
	addr string
	json bool
}

// defaultServerAddr is where glassbox serve listens by default.
const defaultServerAddr = "127.0.0.1:8765"

func init() {
	register(&command{
		name:    "ps",
		summary: "list the models a running server holds in memory",
		run:     runPS,
	})
	register(&command{
		name:    "stop",
		summary: "unload a model from a running server's memory now (as 'ollama stop')",
		run:     runStop,
	})
}

// runStop asks the server at --addr to unload each model named, as
// Ollama's stop does; a model that is not resident is left as it is.
func runStop(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "stop", "MODEL... [--addr HOST:PORT]")
	addr := fs.String("addr", defaultServerAddr, "address of the glassbox server")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	for _, name := range pos {
		_, err := callServer(ctx, http.MethodPost, serverURL(*addr)+"/v1/ps/"+url.PathEscape(name)+"/unload")
		if err != nil {
			if isNoServer(err) {
				return fmt.Errorf("no server running at %s: no model is loaded", *addr)
			}
			return fmt.Errorf("stop %s: %w", name, err)
		}
		fmt.Fprintf(env.stdout, "%s is not in memory now\n", name)
	}
	return nil
}

// psModel is one resident model in GET /v1/ps. Fields the server may not
// send stay zero and print as "-".
type psModel struct {
	Name      string     `json:"name"`
	Bytes     int64      `json:"size_resident"`
	Placement string     `json:"placement"`
	State     string     `json:"state"`
	InUse     int        `json:"in_use"`
	KeepAlive string     `json:"keep_alive"`
	ExpiresAt *time.Time `json:"expires_at"`
	Worker    string     `json:"worker"` // a cluster worker's (on a front)
}

type psReply struct {
	Models []psModel `json:"models"`
	Queue  *struct {
		Running int `json:"running"`
		Waiting int `json:"waiting"`
	} `json:"queue"`
}

func runPS(ctx context.Context, env *cmdEnv, args []string) error {
	var c psConfig
	fs := newFlags(env, "ps", "[--addr HOST:PORT] [--json]")
	fs.StringVar(&c.addr, "addr", defaultServerAddr, "address of the glassbox server")
	fs.BoolVar(&c.json, "json", false, "print the server's JSON reply")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("ps: unexpected arguments %q", pos)
	}
	body, err := callServer(ctx, http.MethodGet, serverURL(c.addr)+"/v1/ps")
	if err != nil {
		if isNoServer(err) {
			return fmt.Errorf("no server running at %s (start one with 'glassbox serve')", c.addr)
		}
		return fmt.Errorf("ps: %w", err)
	}
	if c.json {
		_, err := env.stdout.Write(body)
		return err
	}
	var reply psReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return fmt.Errorf("ps: the server at %s sent a reply that is not a model list: %w", c.addr, err)
	}
	return printPS(env.stdout, &reply, time.Now())
}

// callServer sends a request to a running glassbox server (with
// $GLASSBOX_API_KEY as its bearer token when set) and returns the body of
// a 200 answer; any other status is an error holding the server's message.
func callServer(ctx context.Context, method, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, err
	}
	if key := os.Getenv("GLASSBOX_API_KEY"); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Stage, Message, Hint string }
		}
		if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
			msg := e.Error.Message
			if e.Error.Stage != "" && !strings.HasPrefix(msg, e.Error.Stage+":") {
				msg = e.Error.Stage + ": " + msg
			}
			if e.Error.Hint != "" {
				msg += " (" + e.Error.Hint + ")"
			}
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// serverURL is the base URL of the server at addr (HOST:PORT or a URL).
func serverURL(addr string) string {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return strings.TrimSuffix(addr, "/")
}

// isNoServer reports whether err means nothing listens at the address.
func isNoServer(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

func printPS(w io.Writer, r *psReply, now time.Time) error {
	if len(r.Models) == 0 {
		fmt.Fprintln(w, "no models resident")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		cluster := false
		for _, m := range r.Models {
			cluster = cluster || m.Worker != ""
		}
		if cluster {
			fmt.Fprint(tw, "WHERE\t")
		}
		fmt.Fprintln(tw, "NAME\tMEMORY\tPLACEMENT\tSTATE\tEXPIRES")
		for _, m := range r.Models {
			state := m.State
			if state == "" {
				state = "idle"
				if m.InUse > 0 {
					state = "in use"
				}
			}
			if m.InUse > 0 {
				state = fmt.Sprintf("%s (%d)", state, m.InUse)
			}
			if cluster {
				where := "this server"
				if m.Worker != "" {
					where = "worker " + m.Worker
				}
				fmt.Fprint(tw, where+"\t")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, plan.FormatBytes(m.Bytes), dash(m.Placement), state, expiry(m, now))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.Queue != nil {
		fmt.Fprintf(w, "queue: %d running, %d waiting\n", r.Queue.Running, r.Queue.Waiting)
	}
	return nil
}

// expiry says when an idle model will be unloaded.
func expiry(m psModel, now time.Time) string {
	switch {
	case m.InUse > 0:
		return "when idle + " + dash(m.KeepAlive)
	case m.ExpiresAt == nil || m.ExpiresAt.IsZero() || m.ExpiresAt.Year() > 2200:
		return "never (kept until evicted)"
	}
	d := m.ExpiresAt.Sub(now).Round(time.Second)
	if d <= 0 {
		return "now"
	}
	return fmt.Sprintf("in %s (%s)", d, m.ExpiresAt.Local().Format(time.TimeOnly))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
