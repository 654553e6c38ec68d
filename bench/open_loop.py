"""Open-loop load: requests sent on a fixed schedule, whatever the server's answers do.

A closed-loop client (wrk, 16 connections each sending its next request when the last answer
arrives) measures a saturated server: by Little's law its latency is connections / throughput.
Latency under a given request rate is the other question an operator asks ("at 400 searches/s,
what is p99?"). Here request i is due at start + i / rate, on connection i mod C (keep-alive,
HTTP/1.1); when an earlier answer on its connection kept it from being sent on time, its latency
counts from when it was due, so a slow answer is charged to the sends it delayed too (no
coordinated omission). When it waited for its due time instead, its latency counts from when it
was sent: asyncio's timers wake up to a millisecond late (epoll's timeout is in whole
milliseconds), and that lateness is the client's, not the server's. Python asyncio, stdlib only;
loopback targets only (the caller checks).
"""

import asyncio

from benchlib import _f, percentile


async def _connection(host, port, path, bodies, due_times, headers, lat_ms, errors):
    reader, writer = await asyncio.open_connection(host, port)
    loop = asyncio.get_running_loop()
    try:
        for due, body in zip(due_times, bodies):
            start = due  # behind schedule: charged from the due time
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
                start = loop.time()  # on schedule: from the send (timer lateness is ours)
            data = body.encode()
            writer.write((f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                          f"{headers}Content-Length: {len(data)}\r\n\r\n").encode() + data)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            lat_ms.append((loop.time() - start) * 1000)
            if status != 200:
                errors.append(status)
    finally:
        writer.close()


async def _run(host, port, path, bodies, rate, seconds, connections, api_key):
    loop = asyncio.get_running_loop()
    n = max(1, int(rate * seconds))
    start = loop.time() + 0.2
    headers = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
    lat_ms, errors = [], []
    tasks = []
    for c in range(connections):
        idx = list(range(c, n, connections))
        tasks.append(_connection(host, port, path, [bodies[i % len(bodies)] for i in idx],
                                 [start + i / rate for i in idx], headers, lat_ms, errors))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = loop.time() - start  # from the first due time to the last answer
    failures = [r for r in results if isinstance(r, BaseException)]
    return lat_ms, errors, failures, elapsed


def run_open_loop(host, port, path, bodies, rate, seconds, connections, api_key=None):
    """Sends rate × seconds requests; returns a summary dict (latencies as the module says)."""
    lat_ms, errors, failures, elapsed = asyncio.run(
        _run(host, port, path, bodies, rate, seconds, connections, api_key))
    return {"rate": rate, "connections": connections, "requests": len(lat_ms),
            "achieved_per_s": round(len(lat_ms) / elapsed, 1) if elapsed > 0 else None,
            "p50_ms": percentile(lat_ms, 50), "p90_ms": percentile(lat_ms, 90),
            "p99_ms": percentile(lat_ms, 99), "max_ms": max(lat_ms) if lat_ms else None,
            "non_200": len(errors), "connection_failures": len(failures)}


def print_open_loop_table(title, rows):
    """Markdown table of run_open_loop summaries under a one-line title."""
    print(title + "\n")
    print("| offered req/s | achieved req/s | p50 ms | p90 ms | p99 ms | max ms | errors |")
    print("|---|---|---|---|---|---|---|")
    for x in rows:
        print(f"| {x['rate']:g} | {_f(x.get('achieved_per_s'), 1)} | {_f(x.get('p50_ms'))} | "
              f"{_f(x.get('p90_ms'))} | {_f(x.get('p99_ms'))} | {_f(x.get('max_ms'))} | "
              f"{x['non_200'] + x['connection_failures']} |")
    print()
