// A Pulumi Node.js program whose resource fails to create and which would
// otherwise run for a long time: the engine ends the failed deployment
// without waiting for it.
"use strict";
const pulumi = require("@pulumi/pulumi");

new pulumi.CustomResource("test:index:Thing", "doomed", { name: "x" });
setTimeout(() => {}, 10 * 60 * 1000);
