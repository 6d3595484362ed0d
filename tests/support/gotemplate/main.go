// Command gotemplate renders text/template cases with Go's own engine, for the differential
// tests of rollout_workers.notifications.gotemplate.
//
// stdin:  [{"name": "...", "template": "...", "data": {...}}, ...]
// stdout: [{"output": "..."} | {"error": "..."}, ...]
//
// Data is decoded as Kubernetes decodes unstructured objects: integers become int64, other
// numbers float64. It uses the standard library only (sprig is not reachable offline); the
// sprig functions that Argo's notification catalog calls (add), and sprig's slice, which
// shadows the builtin, are defined below to sprig's documented behaviour.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"text/template"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data"`
}

type result struct {
	Output *string `json:"output,omitempty"`
	Error  *string `json:"error,omitempty"`
}

// convert turns json.Number into int64 or float64, as k8s.io/apimachinery/pkg/util/json does.
func convert(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = convert(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = convert(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// toInt64 is spf13/cast's ToInt64 for the kinds JSON data holds (errors give 0).
func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}
		return 0
	case string:
		s := x
		if i := strings.IndexByte(s, '.'); i > 0 && strings.Trim(s[i+1:], "0") == "" && i+1 < len(s) {
			s = s[:i]
		}
		n, err := strconv.ParseInt(s, 0, 0)
		if err != nil {
			return 0
		}
		return n
	}
	return 0
}

// toInt is spf13/cast's ToInt.
func toInt(v any) int { return int(toInt64(v)) }

var funcs = template.FuncMap{
	// sprig: func slice(list interface{}, indices ...interface{}) interface{} (it shadows
	// text/template's builtin slice in notifications-engine's templates).
	"slice": func(list any, indices ...any) any {
		tp := reflect.TypeOf(list).Kind()
		switch tp {
		case reflect.Slice, reflect.Array:
			l2 := reflect.ValueOf(list)
			l := l2.Len()
			if l == 0 {
				return nil
			}
			var start, end int
			if len(indices) > 0 {
				start = toInt(indices[0])
			}
			if len(indices) < 2 {
				end = l
			} else {
				end = toInt(indices[1])
			}
			return l2.Slice(start, end).Interface()
		default:
			panic(fmt.Errorf("list should be type of slice or array but %s", tp))
		}
	},
	// sprig: func add(i ...interface{}) int64
	"add": func(i ...any) int64 {
		var a int64
		for _, b := range i {
			a += toInt64(b)
		}
		return a
	},
}

func render(c testCase) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	name := c.Name
	if name == "" {
		name = "template"
	}
	t, err := template.New(name).Funcs(funcs).Parse(c.Template)
	if err != nil {
		return "", err
	}
	var data any
	if len(c.Data) > 0 {
		dec := json.NewDecoder(bytes.NewReader(c.Data))
		dec.UseNumber()
		if err := dec.Decode(&data); err != nil {
			return "", err
		}
		data = convert(data)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	results := make([]result, len(cases))
	for i, c := range cases {
		out, err := render(c)
		if err != nil {
			msg := err.Error()
			results[i].Error = &msg
		} else {
			results[i].Output = &out
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
