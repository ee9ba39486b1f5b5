package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sample"
)

// chatHelp lists the interactive chat's commands.
const chatHelp = `/bye (or end of input) leaves, /clear forgets the conversation, /help shows this; Ctrl+C stops a reply`

// runInteractive is 'glassbox run -i' (and 'run' with no prompt on a
// terminal): a chat that keeps the model loaded and its KV cache between
// turns, so a turn evaluates only what it adds to the conversation
// (engine.SessionCache). Each turn is a job in the journal; the first
// plans and loads, the later ones report those stages skipped. first,
// when not empty, is the first message.
func runInteractive(ctx context.Context, env *cmdEnv, f *runFlags, first string, params sample.Params, budget int64) error {
	dev, devErr := planDevice("", true)
	sinks, closeSinks := f.journalSinks(env, "chat")
	defer closeSinks()
	mgr := pipeline.NewManager(pipeline.Options{Sinks: sinks})
	c := &chatState{cache: engine.NewSessionCache(1), warned: map[string]bool{}}
	term := isTerminal(env.stdin) && isTerminal(env.stdout)
	trace := &pipeline.Trace{
		// Warnings go to stderr once per chat, not once per turn.
		Warning: func(code, msg string) {
			if !c.warned[code] {
				c.warned[code] = true
				fmt.Fprintf(env.stderr, "glassbox run: warning: %s\n", msg)
			}
		},
		// A reasoning model's thinking is shown as it comes, dimmed on a
		// terminal; the answer comes through OnToken.
		Token: func(tok api.Token) {
			if tok.Thinking == "" {
				return
			}
			if term {
				fmt.Fprintf(env.stdout, "\x1b[2m%s\x1b[0m", tok.Thinking)
			} else {
				io.WriteString(env.stdout, tok.Thinking)
			}
		},
	}
	// On a terminal, Ctrl+C stops the reply being written, not the chat.
	var interrupts chan os.Signal
	var turnMu sync.Mutex
	var stopTurn context.CancelFunc
	if term {
		signal.Reset(os.Interrupt) // the command's context no longer ends on it
		interrupts = make(chan os.Signal, 1)
		signal.Notify(interrupts, os.Interrupt)
		defer func() { signal.Stop(interrupts); close(interrupts) }()
		go func() {
			for range interrupts {
				turnMu.Lock()
				if stopTurn != nil {
					stopTurn()
				} else {
					fmt.Fprint(env.stderr, "\n(/bye or Ctrl+D leaves)\n>>> ")
				}
				turnMu.Unlock()
			}
		}()
	}
	defer c.close()
	if f.system != "" {
		c.msgs = append(c.msgs, chat.Message{Role: "system", Content: f.system})
	}
	keep := len(c.msgs)
	fmt.Fprintf(env.stderr, "Chatting with %s. %s.\n", f.model, chatHelp)
	in := bufio.NewScanner(env.stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for {
		line := first
		first = ""
		if line == "" {
			fmt.Fprint(env.stdout, ">>> ")
			if !in.Scan() {
				fmt.Fprintln(env.stdout)
				return in.Err()
			}
			line = strings.TrimSpace(in.Text())
		}
		switch line {
		case "":
			continue
		case "/bye":
			return nil
		case "/clear":
			c.msgs = c.msgs[:keep]
			fmt.Fprintln(env.stderr, "(conversation cleared)")
			continue
		case "/help", "/?":
			fmt.Fprintln(env.stderr, chatHelp)
			continue
		}
		c.msgs = append(c.msgs, chat.Message{Role: "user", Content: line})
		turnCtx, cancel := context.WithCancel(ctx)
		turnMu.Lock()
		stopTurn = cancel
		turnMu.Unlock()
		job := mgr.Submit(pipeline.WithTrace(turnCtx, trace),
			pipeline.Params{Kind: "chat", Model: f.model, Params: f.chatParams(c.msgs, params)},
			func(ctx context.Context) (any, error) {
				res, err := c.turn(ctx, env, f, params, dev, devErr, budget)
				if err != nil {
					return nil, err
				}
				return runResult(res), nil
			})
		_, err := job.Wait(context.Background())
		turnMu.Lock()
		stopTurn = nil
		turnMu.Unlock()
		stopped := turnCtx.Err() != nil
		cancel()
		fmt.Fprintln(env.stdout)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if stopped {
			c.msgs = c.msgs[:len(c.msgs)-1]
			fmt.Fprintln(env.stderr, "(stopped; the turn is dropped)")
			continue
		}
		if err != nil {
			if c.text == nil {
				return err // nothing loaded: the next turn would fail the same way
			}
			// The turn is dropped; the conversation stays as it was.
			c.msgs = c.msgs[:len(c.msgs)-1]
			fmt.Fprintf(env.stderr, "glassbox run: %v\n", err)
			var pe *pipeline.Error
			if errors.As(err, &pe) && pe.Stage == pipeline.StageEncode {
				fmt.Fprintln(env.stderr, "(/clear starts the conversation again)")
			}
			continue
		}
		c.msgs = append(c.msgs, chat.Message{Role: "assistant", Content: c.last.Text})
		if f.verbose {
			r := c.last
			fmt.Fprintf(env.stderr, "(%d tokens at %.1f tokens/s; prompt %d tokens, %d from the KV cache, %d evaluated in %s)\n",
				len(r.Tokens), r.DecodeRate(), r.PromptTokens, r.CachedTokens, r.PromptTokens-r.CachedTokens, r.PrefillTime.Round(1e5))
		}
	}
}

// chatState is what an interactive chat keeps between turns.
type chatState struct {
	text  *engine.Text
	plan  *plan.Plan
	cache *engine.SessionCache
	// With --draft: the draft model and its session, kept between turns
	// as the model's is.
	draft      *engine.Text
	draftCache *engine.SessionCache
	msgs       []chat.Message
	last       *engine.Result
	warned     map[string]bool // warning codes printed
}

// turn runs one reply to the conversation so far: plan and load on the
// first, then encode, prefill (of what the cache does not hold) and
// generate, streaming the reply to stdout.
func (c *chatState) turn(ctx context.Context, env *cmdEnv, f *runFlags, params sample.Params,
	dev *plan.Device, devErr error, budget int64) (*engine.Result, error) {
	tr := pipeline.TraceFrom(ctx)
	if c.text == nil {
		path, err := resolveModel(f.model)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		draftPath := ""
		if f.draft != "" {
			if draftPath, err = resolveModel(f.draft); err != nil {
				return nil, errors.New("load: --draft: " + strings.TrimPrefix(err.Error(), "load: "))
			}
		}
		if c.plan, err = admitRun(ctx, path, draftPath, f, dev, devErr, budget); err != nil {
			return nil, err
		}
		if c.text, c.draft, err = engine.LoadTextDraft(ctx, path, draftPath); err != nil {
			return nil, err
		}
		if c.draft != nil {
			c.draftCache = engine.NewSessionCache(1)
		}
	} else {
		tr.OnStageSkipped(pipeline.StagePlan, "planned when the chat started")
		tr.OnStageSkipped(pipeline.StageLoad, "loaded when the chat started, kept for its turns")
	}
	req := engine.TextRequest{Messages: c.msgs, Chat: true, Sampling: params, MaxTokens: f.maxTokens, Stops: f.stops,
		Session: f.session.options(), Format: f.format, Cache: c.cache, SplitThinking: true,
		Draft: c.draft, DraftMax: f.draftMax, DraftMinProb: f.draftMinProb, DraftCache: c.draftCache,
		OnToken: func(_ int, text string) error {
			_, err := io.WriteString(env.stdout, text)
			return err
		}}
	req.Roofline, req.Limiter = generateRoofline(c.plan, c.text.Model.WeightBytes(), req.Session.Threads)
	res, err := c.text.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	c.last = res
	return res, nil
}

func (c *chatState) close() {
	c.cache.Close()
	if c.text != nil {
		c.text.Close()
	}
	if c.draft != nil {
		c.draftCache.Close()
		c.draft.Close()
	}
}

// chatParams is an interactive turn's request as the journal records it.
func (f *runFlags) chatParams(msgs []chat.Message, p sample.Params) map[string]any {
	m := f.params("", p)
	delete(m, "prompt")
	delete(m, "prompt_ids")
	m["messages"] = msgs
	return m
}
