package natsstore

import (
	"errors"
	"net/url"
	"strings"
)

// redacted replaces a secret in every rendering of a Config.
const redacted = "<redacted>"

// secret returns s, or <redacted> when s is set.
func secret(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// RedactURL returns the server URL s with any userinfo replaced by
// <redacted>: a user and password ("nats://svc:pw@host" becomes
// "nats://<redacted>@host") as well as a bare token or user
// ("nats://TOKEN@host"), which a URL cannot tell apart. It works on the
// text, so a URL that does not parse is masked too: everything between the
// scheme and the last "@" goes. A string without "@" is returned as it is.
// The store prints server URLs only through it (errors, log lines,
// [Config.String]); use it to print the URLs you pass in [Config.Servers].
func RedactURL(s string) string {
	rest, scheme := s, ""
	if i := strings.Index(s, "://"); i >= 0 {
		scheme, rest = s[:i+len("://")], s[i+len("://"):]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	return scheme + redacted + rest[at:]
}

// redactedServers returns the server URLs with their userinfo hidden.
func (c Config) redactedServers() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = RedactURL(s)
	}
	return out
}

// scrub returns err with the server URLs of c taken out of its text: every
// entry of Servers and every URL the client splits one into is replaced by
// its RedactURL form. A URL parse error (*url.Error) is replaced whole, as
// its text may quote half of a URL that a comma cut. The result matches
// what err matches through errors.Is, but does not unwrap to it, so the raw
// text cannot be reached and printed.
func (c Config) scrub(err error) error {
	if err == nil {
		return nil
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return &scrubbed{text: "a server URL does not parse (its text is withheld: it may hold a password); check Config.Servers", cause: err}
	}
	var pairs []string
	for _, entry := range c.Servers {
		pairs = append(pairs, entry, RedactURL(entry))
		for _, u := range serverURLs(entry) {
			pairs = append(pairs, u, RedactURL(u))
		}
	}
	return &scrubbed{text: strings.NewReplacer(pairs...).Replace(err.Error()), cause: err}
}

// scrubbed is an error whose text was cleaned of secrets by Config.scrub.
type scrubbed struct {
	text  string
	cause error
}

// Error returns the cleaned text.
func (e *scrubbed) Error() string { return e.text }

// Is reports whether the original error matches target.
func (e *scrubbed) Is(target error) bool { return errors.Is(e.cause, target) }
