"""Serve one chdb session (current ClickHouse, in-process) over stdin/stdout.

    chdb_server.py SESSION_DIR

Used by pkg/testkit/chdb. One JSON object per line each way:

    request   {"id": 1, "sql": "SELECT 1 AS x"}
    response  {"id": 1, "ok": true, "meta": [{"name": "x", "type": "UInt8"}], "data": [[1]]}
    error     {"id": 1, "ok": false, "error": "Code: 62. DB::Exception: ..."}

Requests run one at a time, in order, in the same session, so USE and SET
persist. A failing statement is reported, never fatal. Decimals and 64-bit
integers come back as JSON strings (see SETTINGS below), so no value passes
through a float on the way. The program exits when stdin closes.
"""

import json
import os
import sys

import chdb.session

# Exact values: Python's json would otherwise read a decimal into a float.
SETTINGS = ("SET output_format_json_quote_64bit_integers = 1, "
            "output_format_json_quote_decimals = 1")


def run(session, sql):
    body = session.query(sql, "JSONCompact").bytes()
    if not body.strip():  # DDL, INSERT, SET: no result set
        return {"meta": [], "data": []}
    doc = json.loads(body)
    return {"meta": doc["meta"], "data": doc["data"]}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: chdb_server.py SESSION_DIR")
    # Responses get a private copy of stdout; whatever the engine itself
    # prints goes to stderr and cannot corrupt the protocol.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    session = chdb.session.Session(sys.argv[1])
    session.query(SETTINGS)
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            resp = {"id": rid, "ok": True, **run(session, req["sql"])}
        except Exception as e:  # noqa: BLE001 - every failure is the client's answer
            resp = {"id": rid, "ok": False, "error": str(e) or type(e).__name__}
        out.write(json.dumps(resp) + "\n")
        out.flush()
    session.close()


if __name__ == "__main__":
    main()
