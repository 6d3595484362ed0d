// Command gotemplate renders text/template cases with Go's own engine, for the differential
// tests of rollout_workers.notifications.gotemplate.
//
// stdin:  [{"name": "...", "template": "...", "data": {...}}, ...]
// stdout: [{"output": "..."} | {"error": "..."}, ...]
//
// Data is decoded as Kubernetes decodes unstructured objects: integers become int64, other
// numbers float64. It uses the standard library only (sprig is not reachable offline); the
// sprig functions that Argo's notification catalog calls (add), sprig's slice (it shadows the
// builtin) and sprig's date functions are defined below as sprig defines them; Argo's "time"
// variable is added on request.
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
	"time"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data"`
	// ArgoTime adds Argo Rollouts' "time" variable (utils/record/record.go's timeExprs).
	ArgoTime bool `json:"argoTime"`
}

// Argo Rollouts' timeExprs.
var timeExprs = map[string]any{
	"Parse": func(timestamp string) time.Time {
		res, err := time.Parse(time.RFC3339, timestamp)
		if err != nil {
			panic(err)
		}
		return res
	},
	"Now": func() time.Time { return time.Now() },
}

// sprig's dateInZone (date.go); the tests run with TZ=UTC.
func dateInZone(fmt string, date any, zone string) string {
	var t time.Time
	switch date := date.(type) {
	default:
		t = time.Now()
	case time.Time:
		t = date
	case *time.Time:
		t = *date
	case int64:
		t = time.Unix(date, 0)
	case int:
		t = time.Unix(int64(date), 0)
	case int32:
		t = time.Unix(int64(date), 0)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc, _ = time.LoadLocation("UTC")
	}
	return t.In(loc).Format(fmt)
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
	// sprig's date functions (date.go), as sprig writes them.
	"date":       func(fmt string, date any) string { return dateInZone(fmt, date, "Local") },
	"dateInZone": dateInZone,
	"htmlDate":   func(date any) string { return dateInZone("2006-01-02", date, "Local") },
	"htmlDateInZone": func(date any, zone string) string {
		return dateInZone("2006-01-02", date, zone)
	},
	"toDate": func(fmt, str string) time.Time {
		t, _ := time.ParseInLocation(fmt, str, time.Local)
		return t
	},
	"unixEpoch": func(date time.Time) string { return strconv.FormatInt(date.Unix(), 10) },
	"duration": func(sec any) string {
		var n int64
		switch value := sec.(type) {
		default:
			n = 0
		case string:
			n, _ = strconv.ParseInt(value, 10, 64)
		case int64:
			n = value
		}
		return (time.Duration(n) * time.Second).String()
	},
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
	if m, ok := data.(map[string]any); ok && c.ArgoTime {
		m["time"] = timeExprs
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
