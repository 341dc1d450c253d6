// Builds dist/: the console's bundle (esbuild, minified, fixed file names) and GraphiQL's
// production assets copied from node_modules, so the binary serves everything itself.
// The output depends only on the sources and package-lock.json: CI rebuilds and diffs it.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";

const dist = new URL("./dist/", import.meta.url).pathname;
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const common = {
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  legalComments: "none",
  logLevel: "warning",
};
await build({
  ...common,
  entryPoints: { console: "src/main.tsx" },
  outdir: dist,
  jsx: "automatic",
  jsxImportSource: "preact",
});
await build({ ...common, entryPoints: { "graphiql-start": "src/graphiql.ts" }, outdir: dist });

const copies = [
  ["static/index.html", "index.html"],
  ["static/graphiql.html", "graphiql.html"],
  ["node_modules/react/umd/react.production.min.js", "react.production.min.js"],
  ["node_modules/react-dom/umd/react-dom.production.min.js", "react-dom.production.min.js"],
  ["node_modules/graphiql/graphiql.min.js", "graphiql.min.js"],
  ["node_modules/graphiql/graphiql.min.css", "graphiql.min.css"],
];
for (const [from, to] of copies) copyFileSync(from, dist + to);
