#!/usr/bin/env bash
# The functions ship one HTTP/TLS stack (hyper 1 + rustls on ring) and no regex engine, without
# SSO, and nothing of the CLI's web console (sqs-waiter-console, its templates and its server) nor of the
# contract's JSON Schema (schemars, crates/schema): checked on the graph cargo resolves for the two functions alone, as `make build` and
# `make bench` build them. (The client, CLI and tests turn the SDK's defaults back on for
# themselves, so the workspace-wide graph has both stacks; the functions' must not.)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(cargo tree --locked -p enqueue -p poller -e normal --prefix none --format '{p}' | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u)
status=0
for forbidden in aws-lc-rs aws-lc-sys 'hyper v0.' 'hyper-rustls v0.2[0-6]' 'rustls v0.2[0-2]' regex-automata 'regex v' aws-sdk-sso aws-sdk-ssooidc 'openssl v' openssl-sys \
    'sqs-waiter-console v' 'maud v' 'axum v' 'schemars v'; do
    if hits=$(grep -E "^${forbidden}" <<<"$tree"); then
        echo "check_function_deps: the functions must not link ${forbidden}:" >&2
        echo "$hits" | sed 's/^/  /' >&2
        echo "  (who pulls it: cargo tree -p enqueue -p poller -e normal,features -i <crate>)" >&2
        status=1
    fi
done
for required in 'ring v0.17' 'rustls v0.23' 'hyper v1.'; do
    if ! grep -qE "^${required}" <<<"$tree"; then
        echo "check_function_deps: expected the functions to link ${required}" >&2
        status=1
    fi
done
[ "$status" = 0 ] && echo "check_function_deps: one HTTP/TLS stack (hyper 1, rustls, ring), no regex engine, no SSO, no console"
exit "$status"
