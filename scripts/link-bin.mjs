#!/usr/bin/env node
// `npx petstore` from this folder runs node_modules/.bin/petstore, which this links to our CLI:
// npm links only dependencies' bins there. package.json declares no `bin` on purpose: npm 11's
// exec, seeing the folder's own package declare the command, installs a copy of the whole
// project into its cache first and runs that (13 s, silent, at every fresh clone).
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'node_modules', '.bin');
mkdirSync(bin, { recursive: true });
const link = path.join(bin, 'petstore');
rmSync(link, { force: true });
symlinkSync(path.relative(bin, path.join(root, 'bin', 'petstore.js')), link);
