/**
 * Form fields generated from an agent's input JSON Schema (the subset agent.yaml uses:
 * an object of string / number / integer / boolean / enum properties, `required`, `default`,
 * `description`). Other property types get a JSON text field. The server validates again.
 */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
  additionalProperties?: boolean | JsonSchema;
}

/** The form value holding the input as JSON text when the schema names no property ({@link takesFreeInput}). */
export const FREE_INPUT = '*';

/**
 * True when the schema names no property and does not forbid others (`type: object` alone, or no
 * schema): the agent takes any JSON object, given as JSON text. The form said "no input fields"
 * and sent `{}`, though the API took any object (fresh-tester finding).
 */
export function takesFreeInput(schema: JsonSchema): boolean {
  return Object.keys(schema.properties ?? {}).length === 0 && schema.additionalProperties !== false;
}

export type FormValues = Record<string, string | boolean>;

/** Initial values: each property's default, else empty. */
export function initialValues(schema: JsonSchema): FormValues {
  const out: FormValues = {};
  for (const [k, p] of Object.entries(schema.properties ?? {})) {
    if (p.type === 'boolean') out[k] = p.default === true;
    else out[k] = p.default === undefined ? '' : typeof p.default === 'string' ? p.default : JSON.stringify(p.default);
  }
  return out;
}

/**
 * Form values → the job input. Empty optional fields are left out.
 * @throws Error naming the field when a number or JSON field does not parse, or a required one is empty.
 */
export function toInput(schema: JsonSchema, values: FormValues): Record<string, unknown> {
  if (takesFreeInput(schema)) {
    const text = typeof values[FREE_INPUT] === 'string' ? values[FREE_INPUT].trim() : '';
    if (text === '') return {};
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw new Error('input: must be a JSON object, e.g. {"repo": "org/app"}');
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('input: must be a JSON object, e.g. {"repo": "org/app"}');
    return v as Record<string, unknown>;
  }
  const out: Record<string, unknown> = {};
  const required = new Set(schema.required ?? []);
  for (const [k, p] of Object.entries(schema.properties ?? {})) {
    const v = values[k];
    if (p.type === 'boolean') {
      out[k] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v.trim() : '';
    if (text === '') {
      if (required.has(k)) throw new Error(`${k}: required`);
      continue;
    }
    if (p.type === 'integer' || p.type === 'number') {
      const n = Number(text);
      if (!Number.isFinite(n) || (p.type === 'integer' && !Number.isInteger(n))) throw new Error(`${k}: must be ${p.type === 'integer' ? 'a whole number' : 'a number'}`);
      out[k] = n;
    } else if (p.type === 'string' || p.enum) {
      out[k] = text;
    } else {
      try {
        out[k] = JSON.parse(text);
      } catch {
        throw new Error(`${k}: must be JSON`);
      }
    }
  }
  return out;
}

export function SchemaFields({ schema, values, onChange }: { schema: JsonSchema; values: FormValues; onChange: (v: FormValues) => void }) {
  const required = new Set(schema.required ?? []);
  const props = Object.entries(schema.properties ?? {});
  if (takesFreeInput(schema)) {
    return (
      <label>
        Input <small className="muted">any JSON object (this agent names no fields)</small>
        <textarea name="input-json" rows={3} placeholder="{}" value={typeof values[FREE_INPUT] === 'string' ? values[FREE_INPUT] : ''} onChange={(e) => onChange({ ...values, [FREE_INPUT]: e.target.value })} />
      </label>
    );
  }
  if (props.length === 0) return <p className="muted">This agent takes no input fields.</p>;
  return (
    <>
      {props.map(([k, p]) => {
        const set = (v: string | boolean) => onChange({ ...values, [k]: v });
        const label = (
          <span>
            {p.title ?? k}
            {required.has(k) && <span className="req"> *</span>}
            {p.description && <small className="muted"> {p.description}</small>}
          </span>
        );
        if (p.type === 'boolean')
          return (
            <label key={k} className="check">
              <input type="checkbox" name={`input.${k}`} checked={values[k] === true} onChange={(e) => set(e.target.checked)} /> {label}
            </label>
          );
        if (p.enum)
          return (
            <label key={k}>
              {label}
              <select name={`input.${k}`} value={String(values[k] ?? '')} onChange={(e) => set(e.target.value)}>
                {!required.has(k) && <option value="">—</option>}
                {p.enum.map((o) => (
                  <option key={String(o)}>{String(o)}</option>
                ))}
              </select>
            </label>
          );
        const kind = p.type === 'integer' || p.type === 'number' ? 'number' : 'text';
        return (
          <label key={k}>
            {label}
            <input
              name={`input.${k}`}
              type={kind}
              step={p.type === 'integer' ? 1 : 'any'}
              min={p.minimum}
              max={p.maximum}
              required={required.has(k)}
              value={String(values[k] ?? '')}
              onChange={(e) => set(e.target.value)}
            />
          </label>
        );
      })}
    </>
  );
}
