/**
 * An endpoint's custom headers as the portal's forms edit them: one `Name: value` per line. The
 * server checks names and values (and says what is wrong); here a line is only split.
 */

/** `{Name: value}` as lines, in the order the server lists them. */
export function formatHeaderLines(headers: Record<string, string>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
}

/**
 * The headers the lines give (blank lines skipped; a value keeps everything after the first
 * colon, trimmed), or a message naming the first line that has no name before a colon.
 */
export function parseHeaderLines(text: string): { headers: Record<string, string> } | { error: string } {
  const headers: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (name === '') return { error: `Line ${i + 1} of the headers is not "Name: value".` };
    headers[name] = line.slice(colon + 1).trim();
  }
  return { headers };
}
