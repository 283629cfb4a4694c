package chstore

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Filter is one condition of the structured filter grammar that metrics
// queries and the lists' `filter` parameter share.
type Filter struct {
	Column   string `json:"column"`
	Operator string `json:"operator"`
	Type     string `json:"type"`
	Key      string `json:"key,omitempty"`
	Value    any    `json:"value"`
}

// Filter types and the kinds of field each applies to.
var filterKinds = map[string][]fieldKind{
	"datetime":        {kindDatetime},
	"string":          {kindString},
	"stringOptions":   {kindString},
	"categoryOptions": {kindString, kindScoreCategory},
	"arrayOptions":    {kindArray},
	"number":          {kindNumber},
	"stringObject":    {kindObject},
	"numberObject":    {kindObject, kindScoreNumber},
	"booleanObject":   {kindObject},
	"boolean":         {kindBool},
	"null":            {kindString, kindNumber, kindArray, kindDatetime, kindObject},
}

var comparisons = map[string]bool{"=": true, ">": true, "<": true, ">=": true, "<=": true}

// filterSQL compiles f into a condition over v's rows; the plan learns the
// columns and joins it reads.
func (s *Store) filterSQL(v view, projectID string, f Filter, plan *rowsPlan) (*sqlb, error) {
	fail := func(format string, args ...any) (*sqlb, error) {
		return nil, invalidQuery("", "filter on %q: %s", f.Column, fmt.Sprintf(format, args...))
	}
	fl, err := v.field(f.Column)
	if err != nil {
		return nil, err
	}
	kinds, ok := filterKinds[f.Type]
	if !ok {
		return fail("unknown type %q; the types are %s", f.Type, sortedKeys(filterKinds))
	}
	if !hasKind(kinds, fl.kind) {
		return fail("type %q does not apply to this column", f.Type)
	}
	plan.needField(fl)
	x := fl.expr
	q := &sqlb{}

	if f.Type == "null" {
		isNull := &sqlb{}
		switch fl.kind {
		case kindString:
			isNull.add(x + " = ''")
		case kindNumber:
			isNull.add("isNull(" + x + ")")
		case kindArray:
			isNull.add("empty(" + x + ")")
		case kindDatetime:
			isNull.add(x + " = 0")
		case kindObject:
			parent, leaf, err := metadataPath(f.Key)
			if err != nil {
				return fail("%v", err)
			}
			isNull.add("NOT arrayExists(m -> visitParamExtractRaw(").sub(parent).add(", ?) != '', "+x+")", leaf)
		}
		switch f.Operator {
		case "is null":
			return isNull, nil
		case "is not null":
			return q.add("NOT (").sub(isNull).add(")"), nil
		}
		return fail("operator %q; null filters take \"is null\" or \"is not null\"", f.Operator)
	}

	switch f.Type {
	case "datetime":
		text, ok := f.Value.(string)
		if !ok {
			return fail("value must be an ISO 8601 timestamp")
		}
		t, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return fail("value %q is not an ISO 8601 timestamp with a zone", text)
		}
		if !comparisons[f.Operator] || f.Operator == "=" {
			return fail("operator %q; datetime filters take >, <, >= or <=", f.Operator)
		}
		return q.add(x+" "+f.Operator+" ?", t.UnixMicro()), nil
	case "string":
		text, ok := f.Value.(string)
		if !ok {
			return fail("value must be a string")
		}
		return stringCond((&sqlb{}).add(x), f.Operator, text, fail)
	case "stringOptions", "categoryOptions", "arrayOptions":
		values, err := stringList(f.Value)
		if err != nil {
			return fail("%v", err)
		}
		if fl.kind == kindScoreCategory {
			if f.Key == "" {
				return fail("key must name the score")
			}
			sub, err := s.scoreSubject(v, projectID, f.Key, plan, "hasAny(groupArray(string_value), ?)", "hasAny(cats, ?)", "hasAny(groupArrayArray(cats), ?)", values)
			if err != nil {
				return nil, err
			}
			switch f.Operator {
			case "any of":
				return sub, nil
			case "none of":
				return q.add("NOT (").sub(sub).add(")"), nil
			}
			return fail("operator %q; category filters take \"any of\" or \"none of\"", f.Operator)
		}
		test := "has(?, " + x + ")"
		if fl.kind == kindArray {
			test = "hasAny(" + x + ", ?)"
		}
		switch f.Operator {
		case "any of":
			return q.add(test, values), nil
		case "none of":
			return q.add("NOT "+test, values), nil
		case "all of":
			if fl.kind == kindArray {
				return q.add("hasAll("+x+", ?)", values), nil
			}
		}
		return fail("operator %q; option filters take \"any of\", \"none of\" (and \"all of\" for arrays)", f.Operator)
	case "number":
		n, ok := f.Value.(float64)
		if !ok {
			return fail("value must be a number")
		}
		if !comparisons[f.Operator] {
			return fail("operator %q; number filters take =, >, <, >= or <=", f.Operator)
		}
		return q.add(x+" "+f.Operator+" ?", n), nil
	case "boolean":
		b, ok := f.Value.(bool)
		if !ok {
			return fail("value must be true or false")
		}
		switch f.Operator {
		case "=":
			return q.add(x+" = ?", boolInt(b)), nil
		case "<>", "!=":
			return q.add(x+" != ?", boolInt(b)), nil
		}
		return fail("operator %q; boolean filters take = or <>", f.Operator)
	}

	// The object filters: metadata by key, or a score by name.
	if f.Key == "" {
		return fail("key is required for %s filters", f.Type)
	}
	if fl.kind == kindScoreNumber {
		n, ok := f.Value.(float64)
		if !ok {
			return fail("value must be a number")
		}
		if !comparisons[f.Operator] {
			return fail("operator %q; number filters take =, >, <, >= or <=", f.Operator)
		}
		return s.scoreSubject(v, projectID, f.Key, plan, "avg(value) "+f.Operator+" ?", "s / c "+f.Operator+" ?", "sum(s) / sum(c) "+f.Operator+" ?", n)
	}
	parent, leaf, err := metadataPath(f.Key)
	if err != nil {
		return fail("%v", err)
	}
	raw := (&sqlb{}).add("visitParamExtractRaw(").sub(parent).add(", ?)", leaf)
	var cond *sqlb
	negate := false
	switch f.Type {
	case "stringObject":
		text, ok := f.Value.(string)
		if !ok {
			return fail("value must be a string")
		}
		// A string value compares unquoted; other JSON values as written.
		str := (&sqlb{}).add("if(substring(").sub(raw).add(", 1, 1) = '\"', visitParamExtractString(").sub(parent).
			add(", ?), ", leaf).sub(raw).add(")")
		op := f.Operator
		if op == "does not contain" {
			op, negate = "contains", true
		}
		if cond, err = stringCond(str, op, text, fail); err != nil {
			return nil, err
		}
	case "numberObject":
		n, ok := f.Value.(float64)
		if !ok {
			return fail("value must be a number")
		}
		if !comparisons[f.Operator] {
			return fail("operator %q; number filters take =, >, <, >= or <=", f.Operator)
		}
		cond = (&sqlb{}).add("ifNull(toFloat64OrNull(").sub(raw).add(") "+f.Operator+" ?, 0)", n)
	case "booleanObject":
		b, ok := f.Value.(bool)
		if !ok {
			return fail("value must be true or false")
		}
		switch f.Operator {
		case "=":
		case "<>", "!=":
			negate = true
		default:
			return fail("operator %q; boolean filters take = or <>", f.Operator)
		}
		cond = (&sqlb{}).sub(raw).add(" = ?", fmt.Sprint(b))
	}
	if negate {
		q.add("NOT ")
	}
	return q.add("arrayExists(m -> ").sub(cond).add(", " + x + ")"), nil
}

// stringCond compares x with text. Matching other than = and matches
// ignores case, as Langfuse's ILIKE does.
func stringCond(x *sqlb, op, text string, fail func(string, ...any) (*sqlb, error)) (*sqlb, error) {
	q := &sqlb{}
	lower := likeEscape(strings.ToLower(text))
	like := func(not, pattern string) (*sqlb, error) {
		return q.add("lowerUTF8(").sub(x).add(") "+not+"LIKE ?", pattern), nil
	}
	switch op {
	case "=":
		return q.sub(x).add(" = ?", text), nil
	case "contains":
		return like("", "%"+lower+"%")
	case "does not contain":
		return like("NOT ", "%"+lower+"%")
	case "starts with":
		return like("", lower+"%")
	case "ends with":
		return like("", "%"+lower)
	case "matches":
		if _, err := regexp.Compile(text); err != nil {
			return fail("value is not a regular expression: %v", err)
		}
		return q.add("match(").sub(x).add(", ?)", text), nil
	}
	return fail("operator %q; string filters take =, contains, does not contain, starts with, ends with or matches", op)
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// metadataPath reads a dotted key: the raw JSON of every level but the last
// (the parent object, over the lambda's m) and the last key.
func metadataPath(key string) (*sqlb, string, error) {
	segments := strings.Split(key, ".")
	for _, s := range segments {
		if s == "" {
			return nil, "", fmt.Errorf("key %q has an empty segment", key)
		}
	}
	parent := (&sqlb{}).add("m")
	for _, s := range segments[:len(segments)-1] {
		parent = (&sqlb{}).add("visitParamExtractRaw(").sub(parent).add(", ?)", s)
	}
	return parent, segments[len(segments)-1], nil
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("value must be a non-empty array of strings")
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("value must be a non-empty array of strings")
		}
		out[i] = s
	}
	return out, nil
}

func hasKind(kinds []fieldKind, k fieldKind) bool {
	for _, c := range kinds {
		if c == k {
			return true
		}
	}
	return false
}

func boolInt(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// ParseFilters decodes the `filter` parameter of the lists: a JSON array of
// filter objects.
func ParseFilters(text string) ([]Filter, error) {
	if text == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var filters []Filter
	if err := dec.Decode(&filters); err != nil {
		return nil, invalidQuery("", "filter must be a JSON array of {type, column, operator, value, key?} objects: %v", err)
	}
	if dec.More() {
		return nil, invalidQuery("", "filter must be a single JSON array")
	}
	return filters, nil
}

// filteredKeys renders the semi-join of a list's `filter` parameter: the
// rows whose keys are among those of view's rows that pass every filter.
func (s *Store) filteredKeys(viewName, projectID string, w window, filters []Filter, keys string) (string, []any, error) {
	v := views[viewName]
	plan := rowsPlan{}
	var conds []string
	var args []any
	for _, f := range filters {
		cond, err := s.filterSQL(v, projectID, f, &plan)
		if err != nil {
			return "", nil, err
		}
		conds = append(conds, cond.String())
		args = append(args, cond.args...)
	}
	rows := s.viewRows(v, projectID, w, plan)
	q := &sqlb{}
	q.add("("+keys+") GLOBAL IN (SELECT "+keys+" FROM (").sub(rows).add(") WHERE "+strings.Join(conds, " AND ")+")", args...)
	return q.String(), q.args, nil
}
