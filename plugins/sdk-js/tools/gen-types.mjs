#!/usr/bin/env node
// Generates the TypeScript declarations of the WIT package (`types/wit/`) with jco, as a guest
// sees them: `declare module 'wasq:policy/…@1.1.0'` for every interface of the five worlds.
//
//   node tools/gen-types.mjs [WIT_DIR] [OUT_DIR]
//   (defaults: ../../wit and types/wit; JCO_MODULES: the node_modules holding jco, by default
//   where .ci/ensure-plugin-toolchains installs it: $WASQ_TOOLCHAINS/node/node_modules, with
//   WASQ_TOOLCHAINS defaulting to ${XDG_CACHE_HOME:-~/.cache}/wasq/toolchains)
//
// This is `jco guest-types WIT --world-name W -o OUT` for each world, run through jco's API:
// jco 1.35's CLI gives its WASI shim no preopened directory, so it cannot read the WIT path
// ("failed to read path for WIT"); preopening `/` here works around it.

import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wit = resolve(process.argv[2] ?? resolve(here, '../../../wit'));
const out = resolve(process.argv[3] ?? resolve(here, '../types/wit'));
const toolchains = process.env.WASQ_TOOLCHAINS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'wasq', 'toolchains');
const modules = process.env.JCO_MODULES ?? join(toolchains, 'node', 'node_modules');

const require = createRequire(`${modules}/@bytecodealliance/jco-transpile/package.json`);
const { _setPreopens } = await import(pathToFileURL(require.resolve('@bytecodealliance/preview2-shim/filesystem')).href);
_setPreopens({ '/': '/' });
const { generateGuestTypes } = await import(pathToFileURL(`${modules}/@bytecodealliance/jco-transpile/dist/typegen.js`).href);

await rm(out, { recursive: true, force: true });
for (const world of ['ordering-plugin', 'preemption-plugin', 'flavor-assignment-plugin', 'placement-plugin', 'dispatch-plugin']) {
  const files = await generateGuestTypes(wit, { worldName: world, outDir: `${out}/` });
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
}
console.log(`wrote ${out}`);
