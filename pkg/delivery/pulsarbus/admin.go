package pulsarbus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Admin calls the broker's admin REST API (/admin/v2): what must exist
// before the first event is published — the partitioned topic, the
// consumer's subscription and the topic's retention. A broker keeps nothing
// for a subscription that does not exist yet (a subscription created later,
// even at the earliest position, starts after messages already acknowledged
// by no one and deleted), so services/migrate creates these at deploy time.
type Admin struct {
	base  string
	token string
	hc    *http.Client
}

// NewAdmin returns a client of the admin API at baseURL (http:// or
// https://, e.g. http://127.0.0.1:18080). token, when set, is sent as a
// bearer token (token authentication); hc nil uses a client with a 30 s
// timeout.
func NewAdmin(baseURL, token string, hc *http.Client) (*Admin, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("pulsar admin URL %q: want http:// or https:// and a host", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Admin{base: strings.TrimRight(baseURL, "/"), token: token, hc: hc}, nil
}

// Retention is a topic's retention policy: how long, and up to what size,
// the broker keeps messages every subscription acknowledged (or that no
// subscription holds), so a subscription made or reset later can still
// read them. -1 means unlimited.
type Retention struct {
	Minutes int64 `json:"retentionTimeInMinutes"`
	SizeMB  int64 `json:"retentionSizeInMB"`
}

// DefaultRetention keeps 3 days (the outbox keeps SENT rows as long, see
// --sent-retention) up to 10 GiB per topic.
var DefaultRetention = Retention{Minutes: 72 * 60, SizeMB: 10 * 1024}

// topicPath turns persistent://tenant/ns/name into the admin path
// /admin/v2/persistent/tenant/ns/name.
func topicPath(topic string) (string, error) {
	rest, ok := strings.CutPrefix(topic, "persistent://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", fmt.Errorf("topic %q: want persistent://tenant/namespace/name", topic)
	}
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/admin/v2/persistent/" + strings.Join(parts, "/"), nil
}

// AdminError is a non-2xx answer of the admin API.
type AdminError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("pulsar admin %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

func (a *Admin) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("pulsar admin %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return fmt.Errorf("pulsar admin %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("pulsar admin %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("pulsar admin %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &AdminError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("pulsar admin %s %s: decoding %q: %w", method, path, data, err)
		}
	}
	return nil
}

func isStatus(err error, code int) bool {
	var ae *AdminError
	return errors.As(err, &ae) && ae.Status == code
}

// Partitions returns the partition count of topic: 0 when it is not a
// partitioned topic (plain, or not created yet).
func (a *Admin) Partitions(ctx context.Context, topic string) (int, error) {
	p, err := topicPath(topic)
	if err != nil {
		return 0, err
	}
	var meta struct {
		Partitions int `json:"partitions"`
	}
	if err := a.do(ctx, http.MethodGet, p+"/partitions", nil, &meta); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return 0, nil
		}
		return 0, err
	}
	return meta.Partitions, nil
}

// EnsurePartitionedTopic creates topic with n partitions unless it is
// already partitioned (its count is kept: partitions can only be added, and
// adding them moves keys between partitions). It returns the topic's
// partition count. A plain topic of that name (created by a producer
// before) is an error: it would shadow the partitioned one.
func (a *Admin) EnsurePartitionedTopic(ctx context.Context, topic string, n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("topic %s: %d partitions, want at least 1", topic, n)
	}
	if have, err := a.Partitions(ctx, topic); err != nil || have > 0 {
		return have, err
	}
	p, err := topicPath(topic)
	if err != nil {
		return 0, err
	}
	if err := a.do(ctx, http.MethodPut, p+"/partitions", n, nil); err != nil && !isStatus(err, http.StatusConflict) {
		return 0, fmt.Errorf("creating topic %s with %d partitions: %w", topic, n, err)
	}
	have, err := a.Partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	if have == 0 {
		return 0, fmt.Errorf("topic %s exists but is not partitioned (a producer created it plain before the migration): delete it or name another topic", topic)
	}
	return have, nil
}

// EnsureSubscription creates the durable subscription sub on topic (on
// every partition of a partitioned topic) at the earliest message the topic
// holds, unless it exists: an existing subscription keeps its position.
func (a *Admin) EnsureSubscription(ctx context.Context, topic, sub string) error {
	p, err := topicPath(topic)
	if err != nil {
		return err
	}
	if sub == "" {
		return errors.New("empty subscription name")
	}
	// The position of a new subscription: (-1, -1) is MessageId.earliest
	// (the default, with no body, is the latest).
	earliest := map[string]int64{"ledgerId": -1, "entryId": -1}
	err = a.do(ctx, http.MethodPut, p+"/subscription/"+url.PathEscape(sub), earliest, nil)
	if err != nil && !isStatus(err, http.StatusConflict) {
		return fmt.Errorf("creating subscription %s on %s: %w", sub, topic, err)
	}
	return nil
}

// Subscriptions lists the subscriptions of topic (of its partitions, for a
// partitioned topic).
func (a *Admin) Subscriptions(ctx context.Context, topic string) ([]string, error) {
	p, err := topicPath(topic)
	if err != nil {
		return nil, err
	}
	var subs []string
	if err := a.do(ctx, http.MethodGet, p+"/subscriptions", nil, &subs); err != nil {
		return nil, fmt.Errorf("listing the subscriptions of %s: %w", topic, err)
	}
	return subs, nil
}

// SetRetention sets topic's retention policy (a topic-level policy).
func (a *Admin) SetRetention(ctx context.Context, topic string, r Retention) error {
	p, err := topicPath(topic)
	if err != nil {
		return err
	}
	if err := a.do(ctx, http.MethodPost, p+"/retention", r, nil); err != nil {
		return fmt.Errorf("setting the retention of %s: %w", topic, err)
	}
	return nil
}

// TopicRetention reads topic's own retention policy; ok is false when the
// topic has none (the namespace's applies).
func (a *Admin) TopicRetention(ctx context.Context, topic string) (r Retention, ok bool, err error) {
	p, err := topicPath(topic)
	if err != nil {
		return Retention{}, false, err
	}
	var got *Retention
	if err := a.do(ctx, http.MethodGet, p+"/retention", nil, &got); err != nil {
		return Retention{}, false, fmt.Errorf("reading the retention of %s: %w", topic, err)
	}
	if got == nil {
		return Retention{}, false, nil
	}
	return *got, true, nil
}

// Backlog returns the messages subscription sub of topic has yet to
// acknowledge, summed over the partitions of a partitioned topic; an error
// when the subscription does not exist.
func (a *Admin) Backlog(ctx context.Context, topic, sub string) (int64, error) {
	p, err := topicPath(topic)
	if err != nil {
		return 0, err
	}
	n, err := a.Partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	stats := p + "/stats"
	if n > 0 {
		stats = p + "/partitioned-stats"
	}
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
		} `json:"subscriptions"`
	}
	if err := a.do(ctx, http.MethodGet, stats, nil, &st); err != nil {
		return 0, fmt.Errorf("reading the stats of %s: %w", topic, err)
	}
	s, ok := st.Subscriptions[sub]
	if !ok {
		return 0, fmt.Errorf("topic %s has no subscription %s", topic, sub)
	}
	return s.MsgBacklog, nil
}
