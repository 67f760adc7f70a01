// The Foundation-free part of the wire types (error codes, exit statuses, events, the
// rules for shown text) lives in TouchgateBasics so that the thin `touchgate` front can
// use it; everything that imports TouchgateAPI sees it as before.
@_exported import TouchgateBasics
