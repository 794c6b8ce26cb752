package server

import (
	"context"
	"regexp"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Internal network addresses in error text: IPv4 and bracketed IPv6
// addresses with or without a port, the host:port a socket operation names
// ("dial tcp mysql-0.db:3306"), and the host a name lookup names.
var (
	ipv4Addr   = regexp.MustCompile(`\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b`)
	ipv6Addr   = regexp.MustCompile(`\[[0-9A-Fa-f:.%]+\](?::\d{1,5})?`)
	socketAddr = regexp.MustCompile(`\b(dial|read|write|listen)\s+(tcp[46]?|udp[46]?|unix)\s+[^\s,;"'>]+:\d{1,5}\b`)
	lookupHost = regexp.MustCompile(`\blookup\s+[^\s,;"':]+`)
)

// RedactAddresses is msg without the internal network addresses an error
// text may carry (a driver's "dial tcp 10.0.3.7:3306: connect: connection
// refused", "lookup mysql-0.db on 10.96.0.10:53", a gRPC transport error):
// each becomes "<address>" (a lookup's host "<host>"), the rest of the text
// stays. Every status a server sends goes through it (the logs keep the
// full text), and so do the gateway's answers.
func RedactAddresses(msg string) string {
	msg = socketAddr.ReplaceAllString(msg, "$1 $2 <address>")
	msg = lookupHost.ReplaceAllString(msg, "lookup <host>")
	msg = ipv6Addr.ReplaceAllString(msg, "<address>")
	return ipv4Addr.ReplaceAllString(msg, "<address>")
}

// redactStatus is err with its status message redacted (code and details
// kept); nil for nil.
func redactStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err) // as gRPC converts a handler's error
	}
	msg := RedactAddresses(st.Message())
	if msg == st.Message() {
		return st.Err()
	}
	p := st.Proto()
	p.Message = msg
	return status.FromProto(p).Err()
}

// redactUnary and redactStream are the outermost interceptors: the client
// gets the status without internal addresses, the interceptors inside
// (logging included) saw it whole.
func redactUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	return resp, redactStatus(err)
}

func redactStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return redactStatus(h(srv, ss))
}
