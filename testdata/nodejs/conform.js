// The conformance kit's fixture for the Pulumi Node.js SDK's callbacks
// server: identity callbacks of every kind the SDK supports. The runner
// signals the engine when the program is done and serves the callbacks until
// the engine answers.
//
//   go run ./cmd/callbackconform -- node testdata/nodejs/node_modules/@pulumi/pulumi/cmd/run \
//       '--monitor=${PULUMI_MONITOR}' '--engine=${PULUMI_ENGINE}' testdata/nodejs/conform.js
"use strict";
const pulumi = require("@pulumi/pulumi");

pulumi.runtime.registerResourceTransform((args) => ({ props: args.props, opts: args.opts }));
pulumi.runtime.registerInvokeTransform((args) => ({ args: args.args, opts: args.opts }));
new pulumi.ResourceHook("conform-hook", async () => {});
new pulumi.ErrorHook("conform-error-hook", async () => false);
