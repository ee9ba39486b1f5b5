package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ServerConfig is the front's embedded NATS server.
type ServerConfig struct {
	Listen   string // host:port workers connect to
	Token    string // the token every client must present; required beyond loopback
	StoreDir string // JetStream's file store
	Name     string // the server's name (default "glassbox-front")
}

// CheckListen refuses a cluster address beyond loopback without a token:
// anyone who could reach it could take jobs or inject results.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("cluster: --cluster-listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if token == "" {
		return fmt.Errorf("cluster: refusing to listen on %s without a token: anyone who can reach it could take jobs "+
			"and send results (set --cluster-token, the same --token on each worker, or listen on 127.0.0.1)", addr)
	}
	return nil
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns    *natsserver.Server
	token string
}

// StartServer starts the embedded server and waits until it accepts
// connections (up to 2 minutes on a loaded machine).
func StartServer(c ServerConfig) (*Server, error) {
	if err := CheckListen(c.Listen, c.Token); err != nil {
		return nil, err
	}
	host, portStr, _ := net.SplitHostPort(c.Listen)
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("cluster: --cluster-listen %q: port %q is not 0 to 65535", c.Listen, portStr)
	}
	if port == 0 {
		port = natsserver.RANDOM_PORT
	}
	if c.Name == "" {
		c.Name = "glassbox-front"
	}
	opts := &natsserver.Options{
		ServerName: c.Name, Host: host, Port: port, JetStream: true, StoreDir: c.StoreDir,
		Authorization: c.Token, NoSigs: true, NoLog: true,
		// A job message carries a whole conversation.
		MaxPayload: 8 << 20,
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: nats server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(2 * time.Minute) {
		ns.Shutdown()
		return nil, fmt.Errorf("cluster: nats server on %s did not accept connections within 2 minutes", c.Listen)
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		return nil, errors.New("cluster: nats server started without JetStream (store " + c.StoreDir + ")")
	}
	return &Server{ns: ns, token: c.Token}, nil
}

// URL is the address workers connect to (nats://host:port).
func (s *Server) URL() string { return s.ns.ClientURL() }

// Connect returns an in-process connection to the server.
func (s *Server) Connect(name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.InProcessServer(s.ns), nats.Name(name), nats.MaxReconnects(-1)}
	if s.token != "" {
		opts = append(opts, nats.Token(s.token))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: in-process connection: %w", err)
	}
	return nc, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// Dial connects a worker to a cluster at url with token ("" for none),
// reconnecting for ever when the connection drops.
func Dial(url, token, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second)}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to %s: %w", url, err)
	}
	return nc, nil
}

// ConnectFront connects a front to an external NATS server at url (with
// token, "" for none) instead of embedding one (glassbox serve --nats),
// and checks that the server runs JetStream for this account: a front
// cannot queue jobs without it. The connection then reconnects for ever
// when it drops.
func ConnectFront(ctx context.Context, url, token string) (*nats.Conn, error) {
	nc, err := Dial(url, token, "glassbox-front")
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("cluster: --nats %s: the server refused the credential (--cluster-token): %w", url, errors.Unwrap(err))
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: --nats %s: the server cannot be reached: %w", url, errors.Unwrap(err))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = js.AccountInfo(cctx)
		cancel()
	}
	if err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) ||
			errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("cluster: --nats %s: the server has no JetStream for this account (start nats-server with -js): %w", url, err)
		}
		return nil, fmt.Errorf("cluster: --nats %s: asking the server for JetStream: %w", url, err)
	}
	return nc, nil
}
