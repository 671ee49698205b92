package protocol

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// The hot records, split and progress, are written on every claim and
// every commit: they are encoded by hand, field for field as
// encoding/json writes their wire structs (TestHandEncodingIsJSONs checks
// byte equality), at a fraction of reflection's cost.

// appendSplit appends w as json.Marshal would.
func appendSplit(b []byte, w splitWire) []byte {
	b = appendUint(append(b, `{"schema":`...), uint64(w.Schema))
	b = appendString(append(b, `,"id":`...), w.ID)
	b = appendUint(append(b, `,"fp":`...), w.FP)
	b = appendUint(append(b, `,"weight":`...), w.Weight)
	b = appendUint(append(b, `,"epoch":`...), w.Epoch)
	b = appendString(append(b, `,"status":`...), w.Status)
	b = appendNullable(append(b, `,"owner":`...), w.Owner)
	b = appendNullable(append(b, `,"nonce":`...), w.Nonce)
	b = appendUint(append(b, `,"attempts":`...), uint64(w.Attempts))
	b = strconv.AppendInt(append(b, `,"written_at_ms":`...), w.WrittenAtMs, 10)
	if w.Parent != nil {
		b = appendString(append(b, `,"parent":`...), *w.Parent)
	}
	return append(b, '}')
}

// appendProgress appends w as json.Marshal would.
func appendProgress(b []byte, w progressWire) []byte {
	b = appendUint(append(b, `{"schema":`...), uint64(w.Schema))
	b = appendString(append(b, `,"id":`...), w.ID)
	b = appendUint(append(b, `,"fp":`...), w.FP)
	b = appendUint(append(b, `,"epoch":`...), w.Epoch)
	b = appendNullable(append(b, `,"owner":`...), w.Owner)
	b = append(b, `,"watermark":`...)
	if w.Watermark == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *w.Watermark, 10)
	}
	b = appendBytes(append(b, `,"state":`...), w.State)
	b = strconv.AppendBool(append(b, `,"completed":`...), w.Completed)
	b = strconv.AppendInt(append(b, `,"written_at_ms":`...), w.WrittenAtMs, 10)
	if w.Descriptor != nil {
		b = appendBytes(append(b, `,"descriptor":`...), w.Descriptor)
	}
	if c := w.Cut; c != nil {
		b = appendString(append(b, `,"cut":{"id":`...), c.ID)
		b = appendUint(append(b, `,"epoch":`...), c.Epoch)
		b = appendUint(append(b, `,"counter":`...), c.Counter)
		b = appendUint(append(b, `,"weight":`...), c.Weight)
		b = append(appendBytes(append(b, `,"descriptor":`...), c.Descriptor), '}')
	}
	return append(b, '}')
}

// appendBytes appends p as padded standard base64 in quotes, or null when
// p is nil, as encoding/json writes a []byte.
func appendBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	return append(base64.StdEncoding.AppendEncode(append(b, '"'), p), '"')
}

func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendString appends s as a JSON string: as is when every byte is
// printable ASCII that encoding/json leaves alone, else through
// encoding/json (escapes, HTML-safe characters, invalid UTF-8).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
