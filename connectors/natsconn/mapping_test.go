package natsconn

import (
	"errors"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

func hdr(name, value string) abi.Header {
	return abi.Header{Name: []byte(name), Value: []byte(value)}
}

func TestMappingRoundTrip(t *testing.T) {
	rec := abi.Record{
		Time:    1_700_000_000_123456789,
		Key:     []byte("user-7"),
		Value:   []byte("payload"),
		Headers: []abi.Header{hdr("A", "1"), hdr("B", "2"), hdr("B", "3")},
	}
	h := Mapping{Time: true}.header(&rec)
	var got abi.Record
	if err := decodeMsg(rec.Value, h, 42, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, rec)
	}
}

func TestMappingPlainRecordHasNoHeaders(t *testing.T) {
	rec := abi.Record{Time: 5, Value: []byte("v")}
	if h := (Mapping{}).header(&rec); h != nil {
		t.Fatalf("header = %v, want none for a record without key or headers", h)
	}
	keyed := abi.Record{Key: []byte("k"), Value: []byte("v"), Headers: []abi.Header{hdr("X", "y")}}
	if h := (Mapping{ValueOnly: true}).header(&keyed); h != nil {
		t.Fatalf("ValueOnly header = %v, want none", h)
	}
	h := (Mapping{}).header(&keyed)
	if h.Get(HeaderKey) != "k" || h.Get("X") != "y" || h.Get(HeaderTime) != "" {
		t.Fatalf("header = %v, want key and X but no time", h)
	}
}

func TestMappingLeavesOutReservedHeaders(t *testing.T) {
	rec := abi.Record{Value: []byte("v"), Headers: []abi.Header{hdr("Nats-Msg-Id", "spoof"), hdr(HeaderKey, "spoof"), hdr("Ok", "1")}}
	h := (Mapping{}).header(&rec)
	if _, ok := h["Nats-Msg-Id"]; ok {
		t.Errorf("published a Nats- header: %v", h)
	}
	if _, ok := h[HeaderKey]; ok {
		t.Errorf("a record header overrode the key header: %v", h)
	}
	var got abi.Record
	in := nats.Header{"Nats-Msg-Id": {"id"}, "Nats-Expected-Stream": {"S"}, "Z": {"z"}, "A": {"a"}}
	if err := decodeMsg([]byte("v"), in, 9, &got); err != nil {
		t.Fatal(err)
	}
	want := []abi.Header{hdr("A", "a"), hdr("Z", "z")}
	if !reflect.DeepEqual(got.Headers, want) || got.Time != 9 || got.Key != nil {
		t.Fatalf("decoded %+v, want headers %v sorted, default time, no key", got, want)
	}
}

func TestMappingBadTimeIsMalformed(t *testing.T) {
	var got abi.Record
	err := decodeMsg([]byte("raw"), nats.Header{HeaderTime: {"yesterday"}, HeaderKey: {"k"}}, 1, &got)
	if !errors.Is(err, connectors.ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	if string(got.Value) != "raw" {
		t.Fatalf("value = %q, want the raw payload kept for the dead letter", got.Value)
	}
}
