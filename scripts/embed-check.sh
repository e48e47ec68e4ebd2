#!/usr/bin/env bash
# The embedder's path, checked: pack the packages an application installs to embed Ferry
# (@ferry/runtime and what it depends on), install the tarballs with npm into an empty project
# outside the repository (third-party dependencies from the registry, better-sqlite3 unpatched, as an
# embedder gets it), and run examples/embed.mjs there against a file:// copy of the fixture store: a
# parameterised query, an Arrow query, a refused write, close(), and the process ending by itself.
# Also checked: stdout holds only the example's own lines (logs go to stderr), no AWS SDK
# Node-version notice appears for a file:// store, and a strict TypeScript application (the README's
# example) type-checks against the shipped declarations with skipLibCheck off. Usage: scripts/embed-check.sh (after a build).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PNPM=(npx -y pnpm@12.4.2)
PACKAGES=(core store engines snapshots runtime)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferry-embed-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "== packing ${PACKAGES[*]} into $WORK/tarballs"
"${PNPM[@]}" run build > /dev/null
FILTERS=()
for name in "${PACKAGES[@]}"; do FILTERS+=(--filter "@ferry/$name"); done
"${PNPM[@]}" -r "${FILTERS[@]}" pack --pack-destination "$WORK/tarballs" > /dev/null

for name in "${PACKAGES[@]}"; do
  tarball=$(ls "$WORK"/tarballs/ferry-"$name"-*.tgz)
  manifest=$(tar -xOzf "$tarball" package/package.json)
  node -e '
    const [name, text] = process.argv.slice(1);
    const pkg = JSON.parse(text);
    const problems = [];
    if (pkg.private) problems.push("private");
    if (!pkg.license) problems.push("no license");
    if (!pkg.types || !pkg.exports?.["."]?.types) problems.push("no types");
    if (!pkg.files?.includes("dist")) problems.push("no files");
    for (const [dep, spec] of Object.entries(pkg.dependencies ?? {})) {
      if (String(spec).startsWith("workspace:")) problems.push(`${dep}: ${spec}`);
    }
    if (problems.length > 0) { console.error(`@ferry/${name} is not publishable: ${problems.join(", ")}`); process.exit(1); }
  ' "$name" "$manifest"
done

echo "== npm install of the tarballs in an empty project (better-sqlite3 compiles where no prebuilt binary is reachable)"
mkdir "$WORK/app"
cd "$WORK/app"
printf '{ "name": "ferry-embed-check", "version": "0.0.0", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --loglevel=error "$WORK"/tarballs/*.tgz

cp "$REPO/examples/embed.mjs" .

echo "== tsc: a TypeScript application (strict, skipLibCheck off) type-checks against the shipped .d.ts"
npm install --no-audit --no-fund --loglevel=error --save-dev typescript@5.9.3 @types/node@20
# The README's example, and the @ferry/core types the API's signatures use, named from @ferry/runtime.
cat > consumer.ts <<'TS'
import {
  type ConfigIssue,
  createRuntime,
  type DatasetStatus,
  type JsonValue,
  type PollResult,
  type SpicepodConfig,
  WriteRejectedError,
} from '@ferry/runtime';

const runtime = await createRuntime('spicepod.yaml', { dataDir: '/var/lib/ferry' });
runtime.on('swap', ({ dataset, from, to }) => console.error(`${dataset}: ${from} -> ${to}`));
await runtime.ready(undefined, { timeoutMs: 60_000 });

const params: JsonValue[] = [4];
const { rows } = await runtime.query('SELECT id, customer FROM orders WHERE id = ?', params);
const { table } = await runtime.queryArrow('SELECT count(*) AS n FROM users');
console.log(rows[0], table.getChild('n')?.get(0));
try {
  await runtime.query('DELETE FROM orders');
} catch (error) {
  if (!(error instanceof WriteRejectedError)) throw error;
}
const config: SpicepodConfig = runtime.config;
const issues: readonly ConfigIssue[] = runtime.configErrors;
const status: DatasetStatus | undefined = runtime.status('orders').status;
runtime.on('poll', ({ result }: { result: PollResult }) => console.error(result, config.name, issues, status));
await runtime.close();
TS
printf '{ "compilerOptions": { "target": "es2022", "module": "nodenext", "strict": true, "noEmit": true, "skipLibCheck": false }, "files": ["consumer.ts"] }\n' > tsconfig.json
npx tsc -p . || { echo "embed-check: a TypeScript application does not type-check against the shipped declarations" >&2; exit 1; }
cp -R "$REPO/packages/test-support/fixtures/spice-store" "$WORK/store"
chmod -R u+w "$WORK/store"
rm -f "$WORK/store/README.md"
node -e '
  const fs = require("node:fs");
  const [file, location] = process.argv.slice(1);
  fs.writeFileSync(file, fs.readFileSync(file, "utf8").replaceAll("s3://example-bucket/snapshots/", location));
' "$WORK/store/metadata.json" "file://$WORK/store/"

echo "== node embed.mjs (must end by itself)"
status=0
env -u AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED timeout 180 node embed.mjs "file://$WORK/store/" \
  > "$WORK/stdout" 2> "$WORK/stderr" || status=$?
expected='orders row 4: {"id":4,"customer":"customer-4"}
users: 3 rows (Arrow), snapshot 0
refused: ERR_WRITE_REJECTED
closed'
fail() {
  echo "embed-check: $1" >&2
  echo "--- stdout" >&2; cat "$WORK/stdout" >&2
  echo "--- stderr" >&2; tail -n 40 "$WORK/stderr" >&2
  exit 1
}
[ "$status" -eq 124 ] && fail "the process did not end by itself within 180 s of starting (after close())"
[ "$status" -eq 0 ] || fail "node embed.mjs exited $status"
[ "$(cat "$WORK/stdout")" = "$expected" ] || fail "stdout is not the example's own lines (logs belong on stderr)"
grep -q '"msg":"Dataset '"'"'orders'"'"' now serves snapshot 1"' "$WORK/stderr" || fail "no JSON log line on stderr"
if grep -qi 'AWS SDK\|NodeDeprecationWarning' "$WORK/stderr"; then fail "an AWS SDK notice for a file:// store"; fi
# better-sqlite3 comes unpatched from npm: the runtime must say so (packages/runtime/README.md, Install).
grep -q "better-sqlite3 is the stock build" "$WORK/stderr" || fail "no warning that better-sqlite3 is the stock build"
echo "embed-check: ok ($(node --version); installed from $(ls "$WORK"/tarballs | tr '\n' ' '))"
