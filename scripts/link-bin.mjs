#!/usr/bin/env node
// npm links the bins of dependencies into node_modules/.bin, never the project's own: without
// this link `npx petstore` first copies the whole project into npx's cache (14–27 s, silent).
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'node_modules', '.bin');
mkdirSync(bin, { recursive: true });
const link = path.join(bin, 'petstore');
rmSync(link, { force: true });
symlinkSync(path.relative(bin, path.join(root, 'bin', 'petstore.js')), link);
