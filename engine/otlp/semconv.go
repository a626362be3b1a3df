package otlp

import (
	"encoding/json"
	"strings"
)

// What a span is, read from the names real emitters use: the GenAI
// semantic conventions (current and older names), OpenInference
// (Arize/Phoenix), OpenLLMetry (Traceloop), Google ADK, and the frameworks
// that write their own: pydantic-ai (tool_arguments), strands-agents
// (arguments only in span events), the Vercel AI SDK (ai.toolCall spans)
// and Mastra. Each framework is read as it writes; where one writes
// something no table below names, the span's name is the last resort.

// Role is what a span stands for in the model.
type Role int

// Span roles.
const (
	RoleOther Role = iota
	RoleAgent      // invoke_agent: a turn
	RoleModel      // a model call (chat, generate_content, ...): a turn unless inside another
	RoleTool       // execute_tool: an attempt of a tool call
)

// modelOps are gen_ai.operation.name values of a model call.
var modelOps = map[string]bool{"chat": true, "generate_content": true, "text_completion": true,
	"completion": true, "embeddings": false}

// Role says what s stands for.
func (s *Span) Role() Role {
	op := s.Attrs.Get("gen_ai.operation.name")
	switch {
	case op == "execute_tool":
		return RoleTool
	case op == "invoke_agent":
		return RoleAgent
	case modelOps[op]:
		return RoleModel
	}
	if r, ok := vercelRoles[s.Attrs.Get("ai.operationId")]; ok {
		return r
	}
	switch strings.ToUpper(s.Attrs.Get("openinference.span.kind")) {
	case "TOOL":
		return RoleTool
	case "AGENT":
		return RoleAgent
	case "LLM":
		return RoleModel
	}
	switch strings.ToLower(s.Attrs.Get("traceloop.span.kind")) {
	case "tool":
		return RoleTool
	case "agent":
		return RoleAgent
	}
	if op == "" {
		// Span names alone, as emitters that set no operation attribute do:
		// "execute_tool get_weather", "invoke_agent planner", "call_llm".
		switch name := s.Name; {
		case strings.HasPrefix(name, "execute_tool"):
			return RoleTool
		case strings.HasPrefix(name, "invoke_agent"):
			return RoleAgent
		case name == "call_llm" || strings.HasPrefix(name, "chat ") || strings.HasPrefix(name, "generate_content"):
			return RoleModel
		}
		if s.Attrs.Has("gen_ai.request.model") {
			return RoleModel
		}
		if s.Attrs.Has("llm.model_name") {
			return RoleModel
		}
	}
	return RoleOther
}

// vercelRoles are the Vercel AI SDK's operations (ai.operationId), as
// ai 6 and ai 7's legacy integration write them: a generateText or
// streamText call is the agent's tool loop (a turn), its doGenerate and
// doStream the model calls inside it, ai.toolCall an attempt.
var vercelRoles = map[string]Role{
	"ai.generateText": RoleAgent, "ai.streamText": RoleAgent, "ai.generateObject": RoleAgent, "ai.streamObject": RoleAgent,
	"ai.generateText.doGenerate": RoleModel, "ai.streamText.doStream": RoleModel,
	"ai.generateObject.doGenerate": RoleModel, "ai.streamObject.doStream": RoleModel,
	"ai.toolCall": RoleTool,
}

// Tool is the tool's name.
func (s *Span) Tool() string {
	for _, k := range []string{"gen_ai.tool.name", "tool.name", "ai.toolCall.name", "traceloop.entity.name"} {
		if v := s.Attrs.Get(k); v != "" {
			return v
		}
	}
	name := s.Name
	name = strings.TrimPrefix(name, "execute_tool ")
	name = strings.TrimSuffix(name, ".tool") // OpenLLMetry: "send_email.tool"
	return name
}

// CallID is the tool call's id as the model gave it, or "". Placeholders
// that stand for no id (ADK writes "<not specified>") are no id: trusting
// them would make one call of every call.
func (s *Span) CallID() string {
	for _, k := range []string{"gen_ai.tool.call.id", "tool_call.id", "tool.call.id", "tool.id", "ai.toolCall.id"} {
		switch v := s.Attrs.Get(k); v {
		case "", "<not specified>", "None", "null", "undefined":
		default:
			return v
		}
	}
	return ""
}

// argKeys are where emitters put a tool call's arguments, best first.
var argKeys = []string{
	"gen_ai.tool.call.arguments",      // GenAI semantic conventions
	"tool_arguments",                  // pydantic-ai's default (instrumentation version 2 and older)
	"ai.toolCall.args",                // the Vercel AI SDK
	"gcp.vertex.agent.tool_call_args", // Google ADK
	"tool.parameters",                 // OpenInference, with input.value
	"traceloop.entity.input",          // OpenLLMetry
	"input.value",                     // OpenInference
}

// resultKeys are where emitters put a tool call's result.
var resultKeys = []string{
	"gen_ai.tool.call.result",
	"tool_response",      // pydantic-ai
	"ai.toolCall.result", // the Vercel AI SDK
	"gcp.vertex.agent.tool_response",
	"traceloop.entity.output",
	"output.value",
}

// eventArgs are span events that carry a tool call's arguments, for the
// emitters that write them nowhere else (strands-agents), best first.
var eventArgs = []struct {
	event, attr string
	// pick takes the arguments of the call with id cid ("" when the span
	// has none) out of the attribute's value; ok is false when they are
	// not there.
	pick func(val, cid string) (args string, ok bool)
}{
	// strands-agents 1.x: the tool's input as JSON, in a message of role tool.
	{"gen_ai.tool.message", "content", func(val, _ string) (string, bool) { return val, true }},
	// strands-agents with the latest GenAI conventions: the tool_call part
	// of the input messages.
	{"gen_ai.client.inference.operation.details", "gen_ai.input.messages", toolCallPart},
}

// toolCallPart is the arguments of the tool_call part (GenAI input
// messages) with id cid, or of the only one when none has that id.
func toolCallPart(val, cid string) (string, bool) {
	var msgs []struct {
		Parts []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"parts"`
	}
	if json.Unmarshal([]byte(val), &msgs) != nil {
		return "", false
	}
	var found []json.RawMessage
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type != "tool_call" || p.Arguments == nil {
				continue
			}
			if cid != "" && p.ID == cid {
				return string(p.Arguments), true
			}
			found = append(found, p.Arguments)
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return string(found[0]), true
}

// Args is the call's arguments as JSON (a JSON string when an emitter
// recorded plain text), or nil when the span has none. A Python literal
// (OpenInference's LangChain instrumentation writes the tool's input as
// repr() of a dict, though its input.mime_type says JSON) is read as the
// JSON it stands for, so the same arguments in another key order or
// quoting are the same arguments.
func (s *Span) Args() json.RawMessage {
	k, v := s.argsAttr()
	if k == "" {
		return nil
	}
	return argsOf(k, v)
}

// argsOf is Args of a span whose arguments argsAttr finds in v, under k.
func argsOf(k, v string) json.RawMessage {
	raw := argsJSON(v)
	if k == "traceloop.entity.input" {
		raw = traceloopArgs(raw)
	}
	return raw
}

// argsJSON is v as JSON: as it is when it is JSON, the JSON of the Python
// literal it is, else a JSON string.
func argsJSON(v string) json.RawMessage {
	v = strings.TrimSpace(v)
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	if j, ok := pythonLiteral(v); ok {
		return j
	}
	b, _ := json.Marshal(v)
	return b
}

// argsAttr is where Args reads: the attribute and its value, or for
// arguments only a span event holds, "event NAME" and the arguments the
// event gives; "" when the span has none.
func (s *Span) argsAttr() (key, val string) {
	for _, k := range argKeys {
		v, ok := s.Attrs.Lookup(k)
		if !ok || v == "" {
			continue
		}
		if k == "tool.parameters" && s.Attrs.Get("input.value") != "" {
			continue // OpenInference: tool.parameters is the schema when input.value is there
		}
		return k, v
	}
	if len(s.Events) == 0 {
		return "", ""
	}
	cid := s.CallID()
	for _, ea := range eventArgs {
		for _, e := range s.Events {
			if e.Name != ea.event || e.Attrs.Get(ea.attr) == "" {
				continue
			}
			if id := e.Attrs.Get("id"); id != "" && cid != "" && id != cid {
				continue // another call's message
			}
			if a, ok := ea.pick(e.Attrs.Get(ea.attr), cid); ok && strings.TrimSpace(a) != "" {
				return "event " + ea.event, a
			}
		}
	}
	return "", ""
}

// Result is the call's result as JSON, or nil.
func (s *Span) Result() json.RawMessage {
	for _, k := range resultKeys {
		if v, ok := s.Attrs.Lookup(k); ok && v != "" {
			raw := asJSON(v)
			if k == "traceloop.entity.output" {
				raw = unwrapOutput(raw)
			}
			if noResult(raw) {
				continue
			}
			return raw
		}
	}
	return nil
}

// noResult says a recorded result is an emitter's placeholder for none:
// Google ADK writes {"result": "<not specified>"} for a tool that raised.
func noResult(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 && obj["result"] != nil {
		raw = obj["result"]
	}
	var plain string
	return json.Unmarshal(raw, &plain) == nil && plain == "<not specified>"
}

// Key is the idempotency key the call carried, or "".
func (s *Span) Key() string {
	for _, k := range []string{"retrylab.idempotency_key", "http.request.header.idempotency-key", "http.request.header.idempotency_key"} {
		if v := s.Attrs.Get(k); v != "" {
			return strings.Trim(v, `[]"`)
		}
	}
	return ""
}

// Conversation is gen_ai.conversation.id (or an older or framework name for
// it), which joins traces into one execution.
func (s *Span) Conversation() string {
	for _, k := range []string{"gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id", "traceloop.association.properties.session_id"} {
		if v := s.Attrs.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// ErrorType is error.type, or the type of an exception event, or "".
func (s *Span) ErrorType() string {
	if v := s.Attrs.Get("error.type"); v != "" {
		return v
	}
	for _, e := range s.Events {
		if t := e.Attrs.Get("exception.type"); e.Name == "exception" && t != "" {
			return t
		}
	}
	return ""
}

// ErrorText is the most telling error message the span holds.
func (s *Span) ErrorText() string {
	if s.Message != "" {
		return s.Message
	}
	for _, e := range s.Events {
		if m := e.Attrs.Get("exception.message"); e.Name == "exception" && m != "" {
			return m
		}
	}
	return s.ErrorType()
}

func asJSON(v string) json.RawMessage {
	v = strings.TrimSpace(v)
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

// traceloopArgs turns OpenLLMetry's {"args": [...], "kwargs": {...}} into
// the call's arguments: the keyword arguments when there are no positional
// ones, else the whole record.
func traceloopArgs(raw json.RawMessage) json.RawMessage {
	var in struct {
		Args   []json.RawMessage          `json:"args"`
		Kwargs map[string]json.RawMessage `json:"kwargs"`
	}
	if json.Unmarshal(raw, &in) != nil || in.Kwargs == nil || len(in.Args) > 0 {
		return raw
	}
	b, err := json.Marshal(in.Kwargs)
	if err != nil {
		return raw
	}
	return b
}

// unwrapOutput reads OpenLLMetry's output, which some versions wrap as
// {"output": ...}.
func unwrapOutput(raw json.RawMessage) json.RawMessage {
	var out map[string]json.RawMessage
	if json.Unmarshal(raw, &out) == nil && len(out) == 1 && out["output"] != nil {
		return out["output"]
	}
	return raw
}
