// The guide pages' Markdown renderer. Raw HTML in the source is escaped, not passed through
// (html: false), and markdown-it refuses javascript: and similar link targets.
import MarkdownIt from 'markdown-it';

export const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

export const escapeHtml: (text: string) => string = markdown.utils.escapeHtml;

/** "2. Create an account" -> "create-an-account", so sections can be linked to. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/^[\d.\s]+/, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

markdown.core.ruler.push('heading_ids', (state) => {
  const { tokens } = state;
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i]!;
    if (token.type !== 'heading_open') continue;
    const id = slug(tokens[i + 1]!.content);
    if (id) token.attrSet('id', id);
  }
});

/** The fenced code blocks of a Markdown text, in order (what the quickstart test runs). */
export function codeBlocks(source: string): string[] {
  return markdown.parse(source, {}).filter((token) => token.type === 'fence').map((token) => token.content);
}
