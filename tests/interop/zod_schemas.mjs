// zod 4 as a TypeScript team uses it: schemas written in zod, their JSON Schema emitted by
// zod itself, and messages judged by zod's own `safeParse`. One run per schema:
//
//   node zod_schemas.mjs <schema-name> < messages.jsonl
//
// Reads one message per line on stdin (the JSON text as published), prints the schema's
// JSON Schema (`z.toJSONSchema(schema, {io: "input"})`: what a producer sends, defaults not
// yet applied) on the first line, then one verdict per message, in order:
// {"valid": true} or {"valid": false, "issues": ["path: code", ...]}. A line that is not
// JSON is invalid ("(root): invalid_json"), as a consumer would find it.
//
// The shapes mirror tests/pipelines/contract/differential/models.py (pydantic): the same
// fields, constraints and optionality, in zod's own words.
import * as z from "zod";

const Address = z.strictObject({
  street: z.string().min(1).max(40),
  zip: z.string().regex(/^[0-9]{5}$/),
  country: z.enum(["DE", "FR", "NL"]),
});

const Line = z.strictObject({
  sku: z.string().regex(/^SKU-[0-9]{4}$/),
  qty: z.int().gt(0).lte(99),
});

const Order = z.strictObject({
  kind: z.literal("order"),
  order_id: z.uuid(),
  status: z.enum(["placed", "paid", "shipped"]),
  placed_at: z.iso.datetime({ offset: true }),
  delivery_date: z.iso.date().nullable().optional(),
  customer: z
    .string()
    .min(3)
    .max(20)
    .regex(/^[a-z][a-z0-9_]*$/),
  quantity: z.int().min(1).max(100),
  discount_pct: z.int().min(0).lt(50).multipleOf(5).default(0),
  weight_kg: z.number().gt(0).lte(1000),
  total: z.number().min(0).max(99999),
  note: z.string().max(50).nullable().optional(),
  gift: z.boolean().default(false),
  coupon: z.string().nullable(),
  address: Address,
  lines: z.array(Line).min(1).max(5),
  tags: z.array(z.string().min(1).max(8)).max(3).default([]),
});

const SCHEMAS = { Order };

function issues(error) {
  return error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.code}`);
}

function judge(schema, line) {
  let value;
  try {
    value = JSON.parse(line);
  } catch {
    return { valid: false, issues: ["(root): invalid_json"] };
  }
  const result = schema.safeParse(value);
  return result.success ? { valid: true } : { valid: false, issues: issues(result.error) };
}

const [name] = process.argv.slice(2);
const schema = SCHEMAS[name];
if (schema === undefined) {
  console.error(`unknown schema ${JSON.stringify(name)}; known: ${Object.keys(SCHEMAS).join(", ")}`);
  process.exit(2);
}
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const lines = Buffer.concat(chunks).toString("utf8").split("\n");
if (lines.at(-1) === "") lines.pop();
const out = [JSON.stringify(z.toJSONSchema(schema, { io: "input" }))];
for (const line of lines) out.push(JSON.stringify(judge(schema, line)));
process.stdout.write(out.join("\n") + "\n");
