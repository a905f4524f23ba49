import { describe, expect, it } from 'vitest';
import { formatHeaderLines, parseHeaderLines } from '../../src/header-lines.ts';

describe("the endpoint forms' custom headers, one 'Name: value' per line", () => {
  it('splits each line at its first colon, trims, and skips blank lines', () => {
    expect(parseHeaderLines('X-Shop: eu-west\n\nAuthorization: Basic dXNlcjpwYXNz\r\nX-Url:  https://a.example/x?y=1  \n')).toEqual({
      headers: { 'X-Shop': 'eu-west', Authorization: 'Basic dXNlcjpwYXNz', 'X-Url': 'https://a.example/x?y=1' },
    });
    expect(parseHeaderLines('')).toEqual({ headers: {} });
    expect(parseHeaderLines('X-Empty:')).toEqual({ headers: { 'X-Empty': '' } });
  });

  it('names the first line without a name before a colon', () => {
    expect(parseHeaderLines('X-A: 1\nno colon here')).toEqual({ error: 'Line 2 of the headers is not "Name: value".' });
    expect(parseHeaderLines(': value')).toEqual({ error: 'Line 1 of the headers is not "Name: value".' });
  });

  it('formats what the server lists back into lines that parse to the same headers', () => {
    const headers = { 'X-A': '1', Authorization: 'Bearer t:k' };
    expect(formatHeaderLines(headers)).toBe('X-A: 1\nAuthorization: Bearer t:k');
    expect(parseHeaderLines(formatHeaderLines(headers))).toEqual({ headers });
  });
});
