// A Pulumi Node.js program with a stack transform and a resource hook, run on
// enginetest by enginetest's TestNodeProgramWithStackTransformAndHook.
"use strict";
const pulumi = require("@pulumi/pulumi");

// Every custom resource gets an "added" input; options are kept as they are.
pulumi.runtime.registerResourceTransform((args) => {
    if (!args.custom) {
        return undefined;
    }
    return { props: { ...args.props, added: "by-transform" }, opts: args.opts };
});

const audit = new pulumi.ResourceHook("audit", async (args) => {
    pulumi.log.info(`audit saw ${args.urn} with id ${args.id} and added=${args.newOutputs.added}`);
});

const thing = new pulumi.CustomResource("test:index:Thing", "thing", { name: "x" }, {
    hooks: { afterCreate: [audit] },
});

exports.thingId = thing.id;
