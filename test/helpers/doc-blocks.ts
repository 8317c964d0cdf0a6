// The documentation's code blocks as a reader meets them: read from a served page or a Markdown
// file, pasted one after another into one terminal, and their `# {…}` output comments compared
// with what they print.
import { type ChildProcess, spawn } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { markdown } from '../../src/http/portal/markdown.js';

export interface Block {
  /** The fence's language (`sh`, `js`, `ts`, `json`, `text`), '' when none. */
  lang: string;
  code: string;
}

export const decodeHtml = (html: string): string =>
  html.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');

/** The code blocks of a served page, as it shows them. */
export const servedBlocks = (html: string): Block[] =>
  [...html.matchAll(/<pre><code(?: class="language-([a-z]+)")?>([^]*?)<\/code><\/pre>/g)].map((m) => ({ lang: m[1] ?? '', code: decodeHtml(m[2]!) }));

/** The fenced code blocks of a Markdown text, in order. */
export const markdownBlocks = (source: string): Block[] =>
  markdown.parse(source, {}).filter((t) => t.type === 'fence').map((t) => ({ lang: t.info.trim(), code: t.content }));

/** The JSON values printed on lines of their own. */
export const jsonLines = (text: string): unknown[] =>
  text.split('\n').flatMap((line) => {
    const trimmed = line.trim();
    if (!/^[[{]/.test(trimmed)) return [];
    try {
      return [JSON.parse(trimmed) as unknown];
    } catch {
      return [];
    }
  });

/** What a block documents it prints: its `# {…}` comment lines, parsed. */
export const documentedOutputs = (code: string): unknown[] =>
  jsonLines(code.split('\n').filter((l) => l.startsWith('# ')).map((l) => l.slice(2)).join('\n'));

/**
 * Whether a printed value is what a `# {…}` comment documents. In a documented string, `…`
 * stands for any text (ids and instants differ on every run); everything else is exact, and
 * objects have exactly the documented fields.
 */
export function matchesDocumented(documented: unknown, printed: unknown): boolean {
  if (typeof documented === 'string' && documented.includes('…')) {
    const pattern = documented.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^]*');
    return typeof printed === 'string' && new RegExp(`^${pattern}$`).test(printed);
  }
  if (Array.isArray(documented)) {
    return Array.isArray(printed) && documented.length === printed.length && documented.every((d, i) => matchesDocumented(d, printed[i]));
  }
  if (typeof documented === 'object' && documented !== null) {
    if (typeof printed !== 'object' || printed === null || Array.isArray(printed)) return false;
    const keys = Object.keys(documented);
    return isDeepStrictEqual(keys.toSorted(), Object.keys(printed).toSorted()) &&
      keys.every((key) => matchesDocumented((documented as Record<string, unknown>)[key], (printed as Record<string, unknown>)[key]));
  }
  return isDeepStrictEqual(documented, printed);
}

const DONE = '__block_done__';

/**
 * One bash, like a reader's terminal: blocks are pasted one at a time and their variables, jobs and
 * working folder carry on. `set -eo pipefail`: a failing command ends the shell, and `paste` says so.
 * The shell and what it leaves in the background are one process group, ended by close().
 */
export class Terminal {
  readonly #shell: ChildProcess;
  #stdout = '';
  #stderr = '';
  #finished = 0;

  constructor(options: { cwd: string; env: Record<string, string> }) {
    this.#shell = spawn('bash', ['--noprofile', '--norc'], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.#shell.stdout!.on('data', (c: Buffer) => (this.#stdout += c.toString()));
    this.#shell.stderr!.on('data', (c: Buffer) => (this.#stderr += c.toString()));
    this.#shell.stdin!.write('set -eo pipefail\n');
  }

  /** Everything printed so far (background jobs included). */
  get output(): string {
    return this.#stdout;
  }

  /** Runs one block and resolves with what was printed while it ran; rejects when it fails or takes longer than timeoutMs. */
  async paste(code: string, timeoutMs = 60_000): Promise<string> {
    const start = this.#stdout.length;
    const marker = `\n${DONE}${++this.#finished}\n`;
    this.#shell.stdin!.write(`${code}\nprintf '${marker.replace(/\n/g, '\\n')}'\n`);
    for (const deadline = Date.now() + timeoutMs; !this.#stdout.includes(marker, start); await new Promise((r) => setTimeout(r, 25))) {
      const ended = this.#shell.exitCode !== null || this.#shell.signalCode !== null;
      if (ended || Date.now() > deadline) {
        throw new Error(`${ended ? `the block failed (exit ${this.#shell.exitCode})` : `the block still ran after ${timeoutMs} ms`}:\n${code}\n--- stdout:\n${this.#stdout.slice(start)}\n--- stderr:\n${this.#stderr}`);
      }
    }
    return this.#stdout.slice(start, this.#stdout.indexOf(marker, start));
  }

  close(): void {
    if (this.#shell.pid !== undefined) {
      try {
        process.kill(-this.#shell.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}
