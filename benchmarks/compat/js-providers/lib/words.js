exports.shout = (text) => text.toUpperCase() + '!';
