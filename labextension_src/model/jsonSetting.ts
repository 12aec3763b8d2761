/**
 * Settings the form edits as JSON text (MCP servers, outside ACP agents):
 * the text shown from `GET config` (secrets arrive masked and stay so), and
 * the typed text read back as an object of entries.
 */

/** Entries as the form's text: indented JSON, or empty when there is none. */
export function jsonSettingText(entries: Record<string, unknown>): string {
  return Object.keys(entries).length ? JSON.stringify(entries, null, 2) : '';
}

/**
 * The typed text as an object of entries ({} when empty); null when it is
 * not one, with the parser's message when it is not JSON at all.
 */
export function parseJsonSetting<T>(text: string): { value: Record<string, T> | null; notJson: string | null } {
  if (!text.trim()) {
    return { value: {}, notJson: null };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { value: null, notJson: (error as Error).message };
  }
  const isObject = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  return { value: isObject ? (parsed as Record<string, T>) : null, notJson: null };
}

/** The typed text as the setting, or what is wrong with it, in the caller's words (translated there). */
export function readJsonSetting<T>(
  text: string,
  errors: { notJson: (message: string) => string; notObject: () => string }
): { value: Record<string, T> | null; error: string | null } {
  const { value, notJson } = parseJsonSetting<T>(text);
  if (value) {
    return { value, error: null };
  }
  return { value: null, error: notJson !== null ? errors.notJson(notJson) : errors.notObject() };
}
