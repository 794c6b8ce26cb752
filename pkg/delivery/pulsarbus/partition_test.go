package pulsarbus_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// KeyPartition predicts where the broker put each keyed message of a
// 4-partition topic (the relay's producer options: default router).
func TestKeyPartitionMatchesTheBroker(t *testing.T) {
	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "keypart")
	infratest.CreatePartitionedTopic(t, topic, 4)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatcherBuilderType: pulsar.DefaultBatchBuilder})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seen := map[int]int{}
	for id := int64(900001); id < 900201; id++ {
		mid, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: strconv.FormatInt(id, 10), Payload: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := int(mid.PartitionIdx()), pulsarbus.DataIDPartition(id, 4); got != want {
			t.Fatalf("data_id %d went to partition %d, KeyPartition says %d", id, got, want)
		}
		seen[int(mid.PartitionIdx())]++
	}
	if len(seen) != 4 {
		t.Fatalf("200 keys reached partitions %v, want all 4", seen)
	}
	if b, i := pulsarbus.PartitionOf(topic + "-partition-3"); b != topic || i != 3 {
		t.Errorf("PartitionOf = %s, %d", b, i)
	}
}
