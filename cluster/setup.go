package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// setup creates (or finds, with the same settings) the job stream and the
// workers' bucket; the front and every worker call it, so either may
// start first.
func setup(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, jetstream.KeyValue, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: Stream, Subjects: []string{jobsPrefix + ">"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, MaxMsgSize: 8 << 20,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: stream %s: %w", Stream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: Bucket, TTL: 6 * WorkerTTL, Storage: jetstream.MemoryStorage, History: 1,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: bucket %s: %w", Bucket, err)
	}
	return st, kv, nil
}

// consumerConfig is the shared durable consumer of model's jobs.
func consumerConfig(model string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: Consumer(model), FilterSubject: JobSubject(model), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: ackWait, MaxDeliver: MaxDeliver, InactiveThreshold: 0,
		Description: "glassbox jobs of model " + model,
	}
}

// setupTimeout bounds each JetStream management call.
const setupTimeout = 30 * time.Second
