'use strict';
// Type-check the integrations' declarations (integrations/*.d.ts) and their usage
// (typecheck/integrations.ts) under `strict`, against the installed `ai`, `zod` and
// `@langchain/core` (run by `npm run typecheck`). This is `tsc -p
// typecheck/tsconfig.integrations.json` reporting only our files: every file
// outside node_modules is checked in full (declaration files included, unlike
// `skipLibCheck`), while the frameworks' own declarations are checked only as far as
// our files use them — checking all of them (and @types/node's) would take `tsc`
// about 15 s instead of 5.

const path = require('node:path');
const ts = require('typescript');

const configPath = path.join(__dirname, '..', 'typecheck', 'tsconfig.integrations.json');
const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
const parsed = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configPath));
const program = ts.createProgram(parsed.fileNames, parsed.options);
const ours = program.getSourceFiles().filter((f) => !f.fileName.split(/[\\/]/).includes('node_modules'));
const diagnostics = [
  ...parsed.errors,
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
];
const expected = ['integrations/ai-sdk.d.ts', 'integrations/langchain.d.ts', 'typecheck/integrations.ts'];
const root = path.join(__dirname, '..');
const checked = new Set(ours.map((f) => path.relative(root, f.fileName).split(path.sep).join('/')));
const missing = expected.filter((f) => !checked.has(f));
if (diagnostics.length > 0 || missing.length > 0) {
  process.stderr.write(
    ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => root,
      getNewLine: () => '\n',
    }),
  );
  if (missing.length > 0) process.stderr.write(`not type-checked: ${missing.join(', ')}\n`);
  process.exit(1);
}
