package payhooks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RedisCommand runs one Redis command and returns its reply: nil, string, int64, or []any. Use
// DialRedis, or adapt the client you have, e.g. for go-redis:
//
//	func(ctx context.Context, args ...string) (any, error) {
//		a := make([]any, len(args)); for i, s := range args { a[i] = s }
//		v, err := rdb.Do(ctx, a...).Result(); if err == redis.Nil { return nil, nil }; return v, err
//	}
type RedisCommand func(ctx context.Context, args ...string) (any, error)

// Compare-and-set on the holder's token, so a holder whose lease expired cannot undo a newer claim.
const (
	redisComplete = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end return 0"
	redisExtend   = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
	redisDelete   = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
)

// RedisStore: SET key NX PX is the insert-or-ignore, atomic under concurrent duplicates and across
// processes. Keys expire by themselves: processing after the lease, done after the retention. Not
// durable for the work itself: run Redis with persistence and a non-evicting policy.
//
// CreditOnce marks the payment with SET NX (no expiry) before the work and done after it. The
// marker is not in your ledger's transaction: if the process dies inside the work, the payment
// stays pending and every later CreditOnce for it returns ErrCreditInProgress (never a second
// credit) until you check the ledger and delete or set CreditKey by hand.
type RedisStore struct {
	do         RedisCommand
	prefix     string
	retention  time.Duration
	creditWait time.Duration
}

// RedisOptions: Prefix (default "payhooks:"), Retention (at least 30 days), CreditWait (10 s).
type RedisOptions struct {
	Prefix     string
	Retention  time.Duration
	CreditWait time.Duration
}

// NewRedisStore makes a store that runs its commands with do.
func NewRedisStore(do RedisCommand, opts RedisOptions) (*RedisStore, error) {
	if do == nil {
		return nil, fmt.Errorf("%w: NewRedisStore needs a RedisCommand (DialRedis)", ErrConfig)
	}
	retention, err := checkRetention(opts.Retention)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = "payhooks:"
	}
	if opts.CreditWait == 0 {
		opts.CreditWait = 10 * time.Second
	}
	return &RedisStore{do: do, prefix: opts.Prefix, retention: retention, creditWait: opts.CreditWait}, nil
}

func (s *RedisStore) EventKey(eventID string) string    { return s.prefix + "event:" + eventID }
func (s *RedisStore) CreditKey(paymentID string) string { return s.prefix + "credit:" + paymentID }

func msString(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(float64(d)/float64(time.Millisecond))), 10)
}

func holding(claim *Claim) string { return "processing:" + claim.Token }

func (s *RedisStore) Claim(ctx context.Context, event *Event, lease time.Duration) (*Claim, error) {
	claim := &Claim{EventID: event.ID, Token: newToken(), Attempt: 1}
	reply, err := s.do(ctx, "SET", s.EventKey(event.ID), holding(claim), "NX", "PX", msString(lease))
	if err != nil || reply == nil {
		return nil, err
	}
	return claim, nil
}

func (s *RedisStore) Complete(ctx context.Context, claim *Claim) error {
	_, err := s.do(ctx, "EVAL", redisComplete, "1", s.EventKey(claim.EventID), holding(claim), msString(s.retention))
	return err
}

func (s *RedisStore) RetryLater(ctx context.Context, claim *Claim, delay, lease time.Duration, _ error) error {
	_, err := s.do(ctx, "EVAL", redisExtend, "1", s.EventKey(claim.EventID), holding(claim), msString(delay+lease))
	return err
}

func (s *RedisStore) Release(ctx context.Context, claim *Claim) error {
	_, err := s.do(ctx, "EVAL", redisDelete, "1", s.EventKey(claim.EventID), holding(claim))
	return err
}

// CreditOnce runs work at most once per payment id (see the type's comment).
func (s *RedisStore) CreditOnce(ctx context.Context, paymentID string, work func() error) (CreditResult, error) {
	if err := checkPaymentID(paymentID); err != nil {
		return CreditResult{}, err
	}
	key := s.CreditKey(paymentID)
	deadline := time.Now().Add(s.creditWait)
	pause := 10 * time.Millisecond
	for {
		mine := "pending:" + newToken()
		reply, err := s.do(ctx, "SET", key, mine, "NX")
		if err != nil {
			return CreditResult{}, err
		}
		if reply != nil {
			if err := safeCall(work); err != nil {
				_, _ = s.do(ctx, "EVAL", redisDelete, "1", key, mine)
				return CreditResult{}, err
			}
			if _, err := s.do(ctx, "SET", key, "done"); err != nil {
				return CreditResult{}, err
			}
			return CreditResult{Credited: true}, nil
		}
		current, err := s.do(ctx, "GET", key)
		if err != nil {
			return CreditResult{}, err
		}
		if current == "done" {
			return CreditResult{}, nil
		}
		if current == nil {
			continue
		}
		// Another caller is crediting this payment: wait for its outcome.
		if time.Now().After(deadline) {
			return CreditResult{}, fmt.Errorf("%w (%s)", ErrCreditInProgress, paymentID)
		}
		select {
		case <-ctx.Done():
			return CreditResult{}, ctx.Err()
		case <-time.After(pause):
		}
		if pause *= 2; pause > 200*time.Millisecond {
			pause = 200 * time.Millisecond
		}
	}
}

// DialRedis returns a RedisCommand on a small pool of connections to url
// (redis://[:password@]host:port[/db]). It speaks RESP2 with the standard library only.
func DialRedis(rawURL string) (RedisCommand, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" {
		return nil, fmt.Errorf("%w: a redis:// URL is required", ErrConfig)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "6379")
	}
	password, _ := u.User.Password()
	db := strings.TrimPrefix(u.Path, "/")
	pool := &respPool{addr: addr, password: password, db: db}
	return pool.do, nil
}

type respConn struct {
	conn net.Conn
	r    *bufio.Reader
}

type respPool struct {
	mu       sync.Mutex
	free     []*respConn
	addr     string
	password string
	db       string
}

// RedisError is an error reply from Redis.
type RedisError string

func (e RedisError) Error() string { return "redis: " + string(e) }

func (p *respPool) do(ctx context.Context, args ...string) (any, error) {
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	reply, err := c.roundTrip(ctx, args)
	var redisErr RedisError
	if err != nil && !errors.As(err, &redisErr) {
		c.conn.Close() // a broken connection is not reused
		return nil, err
	}
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
	return reply, err
}

func (p *respPool) get(ctx context.Context) (*respConn, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c := &respConn{conn: conn, r: bufio.NewReader(conn)}
	if p.password != "" {
		if _, err := c.roundTrip(ctx, []string{"AUTH", p.password}); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if p.db != "" && p.db != "0" {
		if _, err := c.roundTrip(ctx, []string{"SELECT", p.db}); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *respConn) roundTrip(ctx context.Context, args []string) (any, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	_ = c.conn.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.conn.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return readReply(c.r)
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("redis: short reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, RedisError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		items := make([]any, n)
		for i := range items {
			if items[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("redis: unexpected reply %q", line)
}
