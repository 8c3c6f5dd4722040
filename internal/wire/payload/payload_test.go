package payload

import (
	"context"
	"testing"
)

func TestReceivedMarksOwned(t *testing.T) {
	ctx := context.Background()
	if Owned(ctx) {
		t.Fatal("a plain context claims an owned payload")
	}
	if !Owned(Received(ctx, []byte("p"))) {
		t.Fatal("Received did not mark the payload owned")
	}
}
