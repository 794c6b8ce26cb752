package chdb

// Bind is chdbBind for the external tests.
var Bind = chdbBind
