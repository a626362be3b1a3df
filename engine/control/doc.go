// Package control is retrylab's cross-process API: how a second retrylab
// process works on a database that a running host already owns, instead of
// fighting over the file.
//
// What crosses processes: the Service's queries and commands (runs, kills,
// faults, the world's clock and resets), the host's notices as a stream,
// imports, audits and exports of traces (streamed both ways), a copy of the
// database, and holds, which keep the host from closing while an attached
// process works through it.
//
// How: the host mounts the control API (Server) on its runtime API's
// loopback listener, behind the same bearer token, and announces itself in
// a file beside the database (HostFile, mode 0600, so only the same user
// reads the token). Dial reads that file and returns a Client, an
// engine.Service whose every method is one request to the host. As in
// etcd's split, the server side imports the engine, the client side only
// its types, and both share this package's wire types.
package control
