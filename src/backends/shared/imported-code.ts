import type { ImportedCode, WindowedCode } from '../../core/types.js';

/** An import entry with both window sides spelled out (a bare code is open on both). */
export function withWindow(entry: ImportedCode): WindowedCode {
  return typeof entry === 'string' ? { code: entry, startsAt: null, expiresAt: null } : entry;
}
