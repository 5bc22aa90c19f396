package journal

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// WireKeys are the keys of every record on the JSON stream (export,
// query --format json, tail --jsonl), in this order, whatever its kind:
// one schema a log pipeline maps once. A key a record has no value for is
// null (false for a flag). journal (the journal's identity: with seq, a
// record's name across a fleet), prevHash and hash close each object.
var WireKeys, wireAbsent = func() ([]string, []string) {
	var keys, absent []string
	t := reflect.TypeOf(Record{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
			if t.Field(i).Type.Kind() == reflect.Bool {
				absent = append(absent, "false")
			} else {
				absent = append(absent, "null")
			}
		}
	}
	return append(keys, "journal", "prevHash", "hash"), append(absent, "null", `""`, `""`)
}()

// Wire encodes the record for the JSON stream (see WireKeys).
func (r *Record) Wire() ([]byte, error) {
	body := []byte(r.body)
	if r.body == "" {
		var err error
		if body, err = json.Marshal(r); err != nil {
			return nil, err
		}
	}
	var have map[string]json.RawMessage
	if err := json.Unmarshal(body, &have); err != nil {
		return nil, err
	}
	if r.journal != "" {
		have["journal"], _ = json.Marshal(r.journal)
	}
	have["prevHash"], _ = json.Marshal(r.PrevHash)
	have["hash"], _ = json.Marshal(r.Hash)
	var b bytes.Buffer
	b.Grow(len(body) + 40*len(WireKeys))
	b.WriteByte('{')
	for i, k := range WireKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(k)
		b.WriteString(`":`)
		if v, ok := have[k]; ok {
			b.Write(v)
		} else {
			b.WriteString(wireAbsent[i])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
