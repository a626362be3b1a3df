// Package room is the workshop room: a teacher's retrylab hosts a room
// (Server) that participants join with a code, and each participant's
// retrylab mirrors its runs, resumes and lesson predictions to it (Mirror)
// as they happen, while it keeps running and recording locally.
//
// The room's HTTP API lives under /v1/room/ on the room's address:
//
//	POST /v1/room/join          {"code", "name", "token"?} -> {"participant", "name", "token"}
//	POST /v1/room/leave         the caller leaves: its name is free, its runs stay
//	POST /v1/room/push          a participant's execution and its events (bearer token)
//	GET  /v1/room/status        Status (participant or teacher token)
//	GET  /v1/room/executions    the caller's own mirrored executions
//	GET  /v1/room/events?execution=ID   the caller's own mirrored events
//	*    /v1/room/mail/...      the room's mail API, sends counted in the caller's outbox
//	*    /v1/room/crm/...       the room's CRM
//
// Every request but join carries a participant token (or the teacher's) as
// a bearer token; join carries the code. Both are compared in constant
// time, a refusal is a 401, and a name that keeps giving a wrong code
// from one address, or an address that keeps failing, is refused with a
// 429 for a while (that name's joins; all joins and requests without a
// valid token). The teacher's control API (reset, clock, faults) is not
// served here: it stays on the host's loopback control address.
//
// The mirror is durable: its cursor (the last event of each execution the
// room acknowledged) lives in the participant's database, in this
// package's bucket, and advances only on the room's acknowledgement; the
// room stores events by (participant, execution, seq), so a resend after a
// kill -9 of either side is harmless.
package room
