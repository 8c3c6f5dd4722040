// The conformance kit's fixture for the Pulumi Node.js SDK's callbacks
// server: callbacks of every kind the SDK supports, following the fixture
// convention in CONFORMANCE.md (each sends back what it gets, but for the
// one request whose known change it makes). The runner signals the engine
// when the program is done and serves the callbacks until the engine
// answers. The SDK has no state migrations at this version.
//
//   go run ./cmd/callbackconform -- node testdata/nodejs/node_modules/@pulumi/pulumi/cmd/run \
//       '--monitor=${PULUMI_MONITOR}' '--engine=${PULUMI_ENGINE}' testdata/nodejs/conform.js
"use strict";
const pulumi = require("@pulumi/pulumi");

pulumi.runtime.registerResourceTransform((args) => {
  if (args.name === "lossless") {
    return {
      props: { ...args.props, conformAdded: "added by the transform" },
      opts: { ...args.opts, retainOnDelete: true },
    };
  }
  return { props: args.props, opts: args.opts };
});
pulumi.runtime.registerInvokeTransform((args) => {
  if (args.token === "conform:index:lossless") {
    return {
      args: { ...args.args, conformAdded: "added by the transform" },
      opts: { ...args.opts, version: "7.0.0" },
    };
  }
  return { args: args.args, opts: args.opts };
});
new pulumi.ResourceHook("conform-hook", async (args) => {
  if (args.name === "refuse-me") {
    throw new Error("conform: refused refuse-me");
  }
});
new pulumi.ErrorHook("conform-error-hook", async (args) => args.errors.length === 1);
