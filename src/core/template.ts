/**
 * Fills `{{path}}` and `{{path|default}}` placeholders in an agent prompt from a context
 * object, e.g. `{{input.repo}}`, `{{job.id}}`, `{{input.test_command|npm test}}`.
 * Objects are inserted as JSON; a missing value with no default becomes the empty string.
 */
export function renderTemplate(template: string, context: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([A-Za-z0-9_.]+)\s*(?:\|([^}]*))?\}\}/g, (_m, path: string, dflt?: string) => {
    let v: unknown = context;
    for (const part of path.split('.')) {
      v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
    }
    if (v === undefined || v === null || v === '') return dflt ?? '';
    return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  });
}
