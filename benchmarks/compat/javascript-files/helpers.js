module.exports.countWords = (text) => text.split(/\s+/).filter(Boolean).length;
