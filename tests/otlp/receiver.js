#!/usr/bin/env node
// A real OTLP receiver for the OTLP tests: @elastic/mockotlpserver on free
// loopback ports (gRPC and HTTP), writing every request it receives as one
// JSON line to a file:
//   {"signal":"traces"|"metrics"|"logs","data":<normalized OTLP request>}
// (normalized: ids in hex, attributes as plain objects; see the package's
// lib/normalize.js). On start it prints one line to stdout:
//   {"grpc":"http://127.0.0.1:PORT","http":"http://127.0.0.1:PORT"}
// It exits when stdin closes (the test dropped it) or on SIGTERM/SIGINT.
//
// Usage: node tests/otlp/receiver.js OUT_FILE [GRPC_PORT]
// (GRPC_PORT: listen there instead of a free port, e.g. to bring a
// collector "back" on the port a daemon already exports to.)

'use strict';

const fs = require('fs');
const {
    MockOtlpServer,
    normalizeTrace,
    normalizeMetrics,
    normalizeLogs,
} = require('@elastic/mockotlpserver');

const out = process.argv[2];
const grpcPort = Number(process.argv[3] || 0);
if (!out || !Number.isInteger(grpcPort)) {
    process.stderr.write('usage: receiver.js OUT_FILE [GRPC_PORT]\n');
    process.exit(2);
}
fs.writeFileSync(out, '');

function writer(signal, normalize) {
    return (request) => {
        let data;
        try {
            data = normalize(request);
        } catch (err) {
            data = {normalizeError: String(err)};
        }
        // Synchronous append: a test reading the file sees whole lines.
        fs.appendFileSync(out, JSON.stringify({signal, data}) + '\n');
    };
}

async function main() {
    const server = new MockOtlpServer({
        logLevel: 'warn',
        services: ['grpc', 'http'],
        grpcHostname: '127.0.0.1',
        grpcPort,
        httpHostname: '127.0.0.1',
        httpPort: 0,
        onTrace: writer('traces', normalizeTrace),
        onMetrics: writer('metrics', normalizeMetrics),
        onLogs: writer('logs', normalizeLogs),
    });
    await server.start();
    const url = (u) => String(u).replace(/\/$/, '');
    process.stdout.write(
        JSON.stringify({grpc: url(server.grpcUrl), http: url(server.httpUrl)}) + '\n'
    );
    let closing = false;
    const stop = async () => {
        if (closing) return;
        closing = true;
        try {
            await server.close();
        } finally {
            process.exit(0);
        }
    };
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    process.stdin.resume();
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

main().catch((err) => {
    process.stderr.write(`receiver: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
});
