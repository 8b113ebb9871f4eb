// @asyncapi/parser, the AsyncAPI initiative's own validator, over AsyncAPI documents.
//
//   node asyncapi_validate.mjs <file> [<file> ...]
//
// Prints one JSON object: file -> {version, diagnostics: [{severity, code, message, path}]}
// (severity 0 error, 1 warning, 2 information, 3 hint, as Spectral numbers them). A document
// the parser cannot read at all has one error diagnostic. Exits 0: the caller judges.
import { readFile } from "node:fs/promises";
import { Parser } from "@asyncapi/parser";

const parser = new Parser();
const out = {};
for (const file of process.argv.slice(2)) {
  try {
    const text = await readFile(file, "utf8");
    const { document, diagnostics } = await parser.parse(text, { source: file });
    out[file] = {
      version: document ? document.version() : null,
      diagnostics: diagnostics.map((d) => ({
        severity: d.severity,
        code: String(d.code),
        message: d.message,
        path: d.path.join("/"),
      })),
    };
  } catch (error) {
    out[file] = {
      version: null,
      diagnostics: [{ severity: 0, code: "exception", message: String(error), path: "" }],
    };
  }
}
process.stdout.write(JSON.stringify(out));
